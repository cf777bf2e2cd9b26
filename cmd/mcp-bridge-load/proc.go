package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// userHZ is the unit of utime and stime in /proc/PID/stat. The kernel exports
// them in USER_HZ, which is 100 on every Linux architecture Go supports;
// reading sysconf(_SC_CLK_TCK) would need cgo for a constant.
const userHZ = 100

// cpuTimes is the CPU a process has used, from /proc/PID/stat.
type cpuTimes struct {
	// self is utime+stime: all threads of the process itself.
	self time.Duration
	// reaped is cutime+cstime: children the process has waited for. A
	// bridge that spawns and reaps a child per session pays for it here.
	reaped time.Duration
}

func (a cpuTimes) sub(b cpuTimes) cpuTimes {
	return cpuTimes{self: a.self - b.self, reaped: a.reaped - b.reaped}
}

// readCPU reads the CPU times of pid. Resolution is 1/userHZ (10ms), which
// is why callers only look at deltas over whole runs.
func readCPU(pid int) (cpuTimes, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read cpu of pid %d: %w", pid, err)
	}
	f, err := statFields(b)
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read cpu of pid %d: %w", pid, err)
	}
	// After the command, fields start at "state" (field 3 in proc(5)), so
	// utime, stime, cutime, cstime (fields 14-17) are at 11-14.
	if len(f) < 15 {
		return cpuTimes{}, fmt.Errorf("read cpu of pid %d: short stat line", pid)
	}
	var ticks [4]int64
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(string(f[11+i]), 10, 64); err != nil {
			return cpuTimes{}, fmt.Errorf("read cpu of pid %d: %w", pid, err)
		}
	}
	return cpuTimes{
		self:   time.Duration(ticks[0]+ticks[1]) * time.Second / userHZ,
		reaped: time.Duration(ticks[2]+ticks[3]) * time.Second / userHZ,
	}, nil
}

// statFields splits a /proc/PID/stat line after the command name. The
// command is in parentheses and may itself contain spaces and ')', so the
// split starts after the last ')'.
func statFields(b []byte) ([][]byte, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, errors.New("malformed stat line")
	}
	return bytes.Fields(b[i+1:]), nil
}

// memStatus is the resident memory of a process from /proc/PID/status, in
// bytes.
type memStatus struct {
	rss  int64 // VmRSS
	anon int64 // RssAnon + RssShmem: memory of this process alone
	file int64 // RssFile: mostly the executable, shared by its siblings
}

// readMem reads the memory lines of /proc/PID/status.
func readMem(pid int) (memStatus, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return memStatus{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	var m memStatus
	seen := false
	for line := range bytes.Lines(b) {
		name, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "VmRSS":
			dst, seen = &m.rss, true
		case "RssAnon", "RssShmem":
			dst = &m.anon
		case "RssFile":
			dst = &m.file
		default:
			continue
		}
		f := bytes.Fields(rest) // "1234", "kB"
		if len(f) != 2 || string(f[1]) != "kB" {
			return memStatus{}, fmt.Errorf("read memory of pid %d: malformed line %q", pid, line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return memStatus{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
		}
		*dst += kb << 10
	}
	if !seen {
		// Zombies and kernel threads have no VmRSS.
		return memStatus{}, fmt.Errorf("read memory of pid %d: no VmRSS", pid)
	}
	return m, nil
}

// descendants returns the PIDs of every process below pid, found by walking
// the parent links of all of /proc. It is a snapshot: children spawned or
// reaped later are not seen.
func descendants(pid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	children := make(map[int][]int)
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process directory
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited while we looked
		}
		f, err := statFields(b)
		if err != nil || len(f) < 2 {
			continue
		}
		ppid, err := strconv.Atoi(string(f[1]))
		if err != nil {
			continue
		}
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	queue := children[pid]
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		out = append(out, p)
		queue = append(queue, children[p]...)
	}
	return out, nil
}

// cpuSample is one reading of one process; ok is false if it was gone.
type cpuSample struct {
	t  cpuTimes
	ok bool
}

// readCPUs reads every pid in pids.
func readCPUs(pids []int) []cpuSample {
	out := make([]cpuSample, len(pids))
	for i, p := range pids {
		t, err := readCPU(p)
		out[i] = cpuSample{t: t, ok: err == nil}
	}
	return out
}

// cpuDelta sums end-start over the processes seen at both ends: one that
// exits mid-run drops out rather than making the sum go negative.
func cpuDelta(start, end []cpuSample) cpuTimes {
	var sum cpuTimes
	for i := range start {
		if !start[i].ok || !end[i].ok {
			continue
		}
		d := end[i].t.sub(start[i].t)
		sum.self += d.self
		sum.reaped += d.reaped
	}
	return sum
}

// rssSum is the summed VmRSS of pids, skipping processes that are gone.
func rssSum(pids []int) int64 {
	var sum int64
	for _, p := range pids {
		if m, err := readMem(p); err == nil {
			sum += m.rss
		}
	}
	return sum
}

// groupRSS estimates the memory a group of sibling processes holds: their
// private memory plus the largest file-backed part once. Summing VmRSS
// would count the executable they share once per process, which for 64
// Go echo children is most of the total. Proportional set size
// (smaps_rollup) would be exact but costs a page-table walk per process,
// too much to sample 64 children ten times a second on the machine under
// test.
func groupRSS(pids []int) int64 {
	var anon, file int64
	for _, p := range pids {
		if m, err := readMem(p); err == nil {
			anon += m.anon
			file = max(file, m.file)
		}
	}
	return anon + file
}

// rssInterval is how often peak RSS is sampled during a run: often enough to
// see a burst of a few hundred milliseconds, rarely enough to cost nothing.
const rssInterval = 100 * time.Millisecond

// rssWatch samples the memory of the serving process (VmRSS) and of its
// children (groupRSS) in a goroutine it owns, keeping the peaks, until stop
// is called.
type rssWatch struct {
	main, children []int
	quit           chan struct{}
	done           chan struct{}

	mu                  sync.Mutex
	mainPeak, childPeak int64
}

// watchRSS starts sampling. The caller must call stop.
func watchRSS(main, children []int) *rssWatch {
	w := &rssWatch{main: main, children: children, quit: make(chan struct{}), done: make(chan struct{})}
	w.sample()
	go w.loop()
	return w
}

func (w *rssWatch) loop() {
	defer close(w.done)
	t := time.NewTicker(rssInterval)
	defer t.Stop()
	for {
		select {
		case <-w.quit:
			return
		case <-t.C:
			w.sample()
		}
	}
}

func (w *rssWatch) sample() {
	m, c := rssSum(w.main), groupRSS(w.children)
	w.mu.Lock()
	w.mainPeak = max(w.mainPeak, m)
	w.childPeak = max(w.childPeak, c)
	w.mu.Unlock()
}

// stop ends sampling, takes a last sample and returns the peaks.
func (w *rssWatch) stop() (mainPeak, childPeak int64) {
	close(w.quit)
	<-w.done
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mainPeak, w.childPeak
}
