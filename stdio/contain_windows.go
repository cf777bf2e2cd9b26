package stdio

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Windows contains a child in a Job Object. What holds there:
//
//   - Every child runs in a job of its own, with
//     JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, whose only handle the bridge
//     holds (not inheritable, so no child holds one). Everything the child
//     starts is in the job too: a process created by a process in a job
//     belongs to it, and without JOB_OBJECT_LIMIT_BREAKAWAY_OK none may
//     leave it. Windows has no orphans to lose: whatever the parent
//     chain, the job knows its members.
//   - Stop closes stdin, waits the grace period, then terminates the job:
//     every process in it, at once (TerminateJobObject: "as if
//     TerminateProcess were called for each process"). There is no
//     SIGTERM in between: a console-less child cannot be asked to exit
//     (GenerateConsoleCtrlEvent reaches only processes sharing the
//     caller's console), so stdin's end is the polite request.
//   - When the child exits by itself, the job is terminated too: what it
//     left running dies with it.
//   - When the bridge dies, however it dies (TerminateProcess, a crash),
//     the kernel closes its handles, the last handle of each job goes,
//     and KILL_ON_JOB_CLOSE kills every process of every child.
//
// The child is created with CREATE_SUSPENDED, assigned to its job, then
// resumed: it runs no instruction, and starts nothing, outside the job
// (as "Destroying all child processes (and grandchildren) when the parent
// exits", The Old New Thing, 2013-12-09, does it). The newer way,
// PROC_THREAD_ATTRIBUTE_JOB_LIST (Windows 10), names the job at creation,
// but os/exec builds the attribute list of CreateProcess itself and takes
// none from its caller. Created suspended, the child would stay suspended,
// and outside any job, if the bridge died between its creation and its
// assignment; so the bridge first puts itself in a job of its own with
// KILL_ON_JOB_CLOSE (bridgeJob), which every child joins as it is created
// (a process inherits its creator's job), and which the kernel closes,
// killing what is in it, when the bridge dies (the way cargo contains its
// builds). A child's job then nests inside it (Windows 8 and later allow
// nested jobs; Go needs Windows 10).
//
// The child gets CREATE_NO_WINDOW: a console of its own without a window,
// which its own console children share (no window flashes up for each),
// and where a Ctrl-C typed at the bridge's console does not reach, as a
// process group of its own keeps it from the terminal on Unix.

// stopSignals are Stop's steps after closing stdin: the job's end only.
var stopSignals = []syscall.Signal{syscall.SIGKILL}

func probe(c Containment) (string, error) {
	switch c {
	case ContainJobObject:
		return probeJob()
	case ContainPIDNamespace, ContainCgroup:
		return "", errOtherSystem{c, "Linux"}
	case ContainProcessGroup:
		return "", errOtherSystem{c, "Linux and macOS"}
	}
	return "", fmt.Errorf("unknown containment %q", c)
}

// probeJob makes a job as a child's is made, once per process. It also
// puts this process in its own job (bridgeJob), as the first child would:
// so the log of the strategy in use says whether that worked.
var probeJob = sync.OnceValues(func() (string, error) {
	job, err := newJob(Limits{})
	if err != nil {
		return "", fmt.Errorf("no Job Object: %w", err)
	}
	windows.CloseHandle(job)
	why := "a Job Object per child"
	if _, err := bridgeJob(); err != nil {
		why += fmt.Sprintf(" (the bridge could not join a job of its own: %v; a child is contained only once assigned its job, a moment after its creation)", err)
	}
	return why, nil
})

// bridgeJob puts this process in a job that kills every process in it
// when its last handle, which this process holds for its whole life,
// closes: when this process exits. See the comment at the top of the file.
var bridgeJob = sync.OnceValues(func() (windows.Handle, error) {
	job, err := newJob(Limits{})
	if err != nil {
		return 0, err
	}
	if err := windows.AssignProcessToJobObject(job, windows.CurrentProcess()); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("join a job: %w", err)
	}
	return job, nil // never closed: the kernel closes it as this process ends
})

// newJob creates a job that kills every process in it when its last
// handle closes, with a sandbox's limits (zero: none). The handle is not
// inheritable (no security attributes): a child holding one would keep
// its own job alive.
func newJob(l Limits) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("create a job: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if l.Memory > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
		info.JobMemoryLimit = uintptr(l.Memory)
	}
	if l.Procs > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = uint32(l.Procs)
	}
	if l.CPU > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_TIME
		info.BasicLimitInformation.PerJobUserTimeLimit = int64(l.CPU / 100) // in 100 ns units
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, fmt.Errorf("set a job to kill on close: %w", err)
	}
	return job, nil
}

func startTree(cmd *exec.Cmd, s Containment, sp *sandboxSpawn) (tree, error) {
	if s != ContainJobObject {
		_, err := probe(s)
		if err == nil {
			err = fmt.Errorf("unknown containment %q", s)
		}
		return nil, err
	}
	_, _ = bridgeJob() // its failure is logged with the strategy; it only opens a gap
	attr := &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NO_WINDOW}
	// The file that runs, with the extension os/exec will find for it.
	file := cmd.Path
	if !filepath.IsAbs(file) && cmd.Dir != "" {
		file = filepath.Join(cmd.Dir, file)
	}
	if f, err := findExecutable(file, cmd.Env); err == nil {
		file = f
	}
	if abs, err := filepath.Abs(file); err == nil {
		file = abs // cmd.exe runs in cmd.Dir
	}
	if isBatchFile(file) {
		if err := viaCmdExe(cmd, file, attr); err != nil {
			return nil, err
		}
	}
	job, err := newJob(sp.jobLimits())
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		windows.CloseHandle(job)
		return nil, err
	}
	if err := assignAndResume(job, cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		windows.CloseHandle(job)
		return nil, err
	}
	return &jobTree{cmd: cmd, job: job}, nil
}

// viaCmdExe runs the batch file script (cmd.Path, found) through
// cmd.exe, as CreateProcess's documentation requires (see
// batchCommandLine). os/exec has no case for batch files (as of Go 1.26,
// syscall.StartProcess hands any path to CreateProcess): npx.cmd would
// reach CreateProcess as the program, which then starts cmd.exe itself,
// an undocumented path, with arguments quoted for CommandLineToArgvW,
// which cmd.exe does not follow. os/exec's documentation leaves the
// quoting for cmd.exe to the caller, through SysProcAttr.CmdLine.
func viaCmdExe(cmd *exec.Cmd, script string, attr *syscall.SysProcAttr) error {
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		return fmt.Errorf("find cmd.exe to run %s: %w", cmd.Path, err)
	}
	cmdExe := filepath.Join(sys, "cmd.exe")
	line, err := batchCommandLine(cmdExe, script, cmd.Args[1:])
	if err != nil {
		return fmt.Errorf("run the batch file %s: %w", cmd.Path, err)
	}
	cmd.Path = cmdExe
	attr.CmdLine = line
	return nil
}

// assignAndResume puts the suspended process pid in job, then resumes its
// one thread. os.Process holds a handle to the process until Wait, so its
// pid names it and no other until then.
func assignAndResume(job windows.Handle, pid int) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return fmt.Errorf("open the child: %w", err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		return fmt.Errorf("put the child in its job: %w", err)
	}
	return resumeProcess(pid)
}

// resumeProcess resumes the threads of the suspended process pid: os/exec
// closes the handle of its first thread, so it is found again in a
// snapshot of the system's threads.
func resumeProcess(pid int) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("list threads: %w", err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != uint32(pid) {
			continue
		}
		th, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("open the child's thread: %w", err)
		}
		_, err = windows.ResumeThread(th)
		windows.CloseHandle(th)
		if err != nil {
			return fmt.Errorf("resume the child: %w", err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("list threads: %w", err)
	}
	if resumed == 0 {
		return errors.New("resume the child: no thread found")
	}
	return nil
}

// jobTree is a command and everything it starts, in a job of their own.
type jobTree struct {
	cmd *exec.Cmd
	job windows.Handle

	mu     sync.Mutex // orders signals against closing the job
	closed bool
}

func (t *jobTree) pid() int { return t.cmd.Process.Pid }

// signal terminates the job for SIGKILL. Nothing else can be sent (see
// stopSignals). The job's handle names it until closed, so it is never
// another's.
func (t *jobTree) signal(sig syscall.Signal) {
	if sig != syscall.SIGKILL {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		_ = windows.TerminateJobObject(t.job, 1)
	}
}

func (t *jobTree) wait() error {
	err := t.cmd.Wait()
	// Whatever the child left. The job is open until closed below, so
	// this needs no lock: mu guards only the closing.
	_ = windows.TerminateJobObject(t.job, 1)
	t.waitEmpty()
	t.mu.Lock()
	windows.CloseHandle(t.job)
	t.closed = true
	t.mu.Unlock()
	return waitError(err)
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, which
// x/sys/windows does not define.
type jobAccounting struct {
	TotalUserTime, TotalKernelTime                       int64
	ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime   int64
	TotalPageFaultCount, TotalProcesses, ActiveProcesses uint32
	TotalTerminatedProcesses                             uint32
}

// waitEmpty waits until no process of the job is left. TerminateJobObject
// returns before they are gone (TerminateProcess is asynchronous), so the
// job is asked how many are active until none is. It gives up after a
// minute: only a process stuck in the kernel outlives its termination
// that long.
func (t *jobTree) waitEmpty() {
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		var info jobAccounting
		if err := windows.QueryInformationJobObject(t.job, windows.JobObjectBasicAccountingInformation,
			uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil || info.ActiveProcesses == 0 {
			return
		}
		<-tick.C
	}
}
