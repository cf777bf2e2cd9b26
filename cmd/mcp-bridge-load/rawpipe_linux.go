package main

import (
	"io"
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// fastStdio sets the echo child up the way a fast stdio server in Go is
// set up, so that the bridge is measured against a child that costs little
// per message and does not hide the bridge's own cost (with 64 sessions on
// two cores, 64 default-configured Go children used more CPU per call than
// the whole HTTP floor):
//
//   - One P. The child is a single loop; with more Ps, every message that
//     wakes it also wakes spinning threads looking for work.
//   - stdin and stdout non-blocking, behind the runtime's poller, and read
//     and written with raw system calls through RawConn. A blocking read
//     parks a thread in the kernel, and each system call entered the
//     ordinary way wakes sysmon from its idle sleep: several futex and
//     nanosleep calls per message, about as much CPU as the message itself.
//
// The pipe floor runs this same child, so both floors and the bridge face
// the same server. Only pipes are switched (O_NONBLOCK is shared with
// whoever else holds the file, such as a terminal's shell); anything else,
// or any failure, leaves the plain files in place.
func fastStdio(stdin, stdout *os.File) (io.Reader, io.Writer) {
	runtime.GOMAXPROCS(1)
	if !isPipe(stdin) || !isPipe(stdout) {
		return stdin, stdout
	}
	r, rerr := rawPipe(stdin, "stdin")
	w, werr := rawPipe(stdout, "stdout")
	if rerr != nil || werr != nil {
		// Back to blocking, which the plain files expect.
		_ = syscall.SetNonblock(int(stdin.Fd()), false)
		_ = syscall.SetNonblock(int(stdout.Fd()), false)
		return stdin, stdout
	}
	return rawReader{r}, rawWriter{w}
}

func isPipe(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// rawPipe returns a RawConn for the pipe f in non-blocking mode, so that
// waiting for it goes through the poller instead of blocking a thread.
func rawPipe(f *os.File, name string) (syscall.RawConn, error) {
	fd := f.Fd()
	if err := syscall.SetNonblock(int(fd), true); err != nil {
		return nil, err
	}
	// A second File for the descriptor, created non-blocking so the
	// poller takes it; the RawConn keeps it (and so the descriptor) alive.
	return os.NewFile(fd, name).SyscallConn()
}

// rawReader reads with read(2) as a raw system call, waiting in the
// poller when the pipe is empty.
type rawReader struct{ rc syscall.RawConn }

func (r rawReader) Read(p []byte) (int, error) {
	var (
		n     int
		errno syscall.Errno
	)
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			r0, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
			n, errno = int(r0), e
			if e != syscall.EINTR {
				return e != syscall.EAGAIN // EAGAIN: wait for data
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, errno
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// rawWriter writes with write(2) as a raw system call, waiting in the
// poller while the pipe is full.
type rawWriter struct{ rc syscall.RawConn }

func (w rawWriter) Write(p []byte) (int, error) {
	written := 0
	var errno syscall.Errno
	err := w.rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			rest := p[written:]
			r0, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(rest))), uintptr(len(rest)))
			switch e {
			case 0:
				written += int(r0)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until the pipe has room
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = errno
	}
	return written, err
}
