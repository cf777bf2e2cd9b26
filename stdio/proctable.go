package stdio

// procEntry is one process of a snapshot of the process table, as a
// system without pidfds or /proc children lists (macOS) reads it.
type procEntry struct {
	pid, ppid int
	// start is when the process started, in the system's own unit: with
	// pid it names one process, so a pid reused since the snapshot is not
	// taken for the process it named.
	start int64
}

// descendantsIn lists every process below root in table, nearest first,
// by following parent links: children, their children, and so on. A
// descendant that called setsid or setpgid is still found (it keeps its
// parent); one whose parent died before it is not (it has been re-parented
// to init). The snapshot may be torn (processes forking and exiting while
// it was read): a process is listed once, and a cycle of parent links
// (a pid reused during the read) ends the walk instead of looping.
func descendantsIn(table []procEntry, root int) []procEntry {
	children := make(map[int][]procEntry, len(table))
	for _, p := range table {
		if p.pid != p.ppid { // the kernel's own process is its own parent
			children[p.ppid] = append(children[p.ppid], p)
		}
	}
	var out []procEntry
	seen := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, c := range children[parent] {
			if seen[c.pid] {
				continue
			}
			seen[c.pid] = true
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}
