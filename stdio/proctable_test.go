package stdio

import (
	"slices"
	"testing"
)

// TestDescendantsIn walks fake process tables as macOS's sysctl
// kern.proc.all would give them, so the walk that contain_darwin.go
// relies on is tested where CI runs.
func TestDescendantsIn(t *testing.T) {
	// launchd (1) and the bridge (100) with its child 200:
	// 200 (npx) -> 201 (sh) -> 202 (node) -> 203 (a setsid'd daemon)
	//           -> 204 (a second child)
	// 300 was started in that tree by a process that died before it, so it
	// is launchd's now. 400 is the bridge's other child.
	table := []procEntry{
		{pid: 0, ppid: 0}, // the kernel is its own parent
		{pid: 1, ppid: 0},
		{pid: 100, ppid: 1},
		{pid: 200, ppid: 100, start: 1},
		{pid: 201, ppid: 200, start: 2},
		{pid: 202, ppid: 201, start: 3},
		{pid: 203, ppid: 202, start: 4},
		{pid: 204, ppid: 200, start: 5},
		{pid: 300, ppid: 1, start: 6},
		{pid: 400, ppid: 100, start: 7},
		{pid: 401, ppid: 400, start: 8},
	}
	tests := []struct {
		name  string
		table []procEntry
		root  int
		want  []int
	}{
		{"the whole tree, nearest first", table, 200, []int{201, 204, 202, 203}},
		{"a subtree", table, 202, []int{203}},
		{"a leaf has none", table, 203, nil},
		{"a process not in the table has none", table, 999, nil},
		{"another child's tree is apart", table, 400, []int{401}},
		{"the kernel's self-parenting ends no walk in a loop", table, 0, []int{1, 100, 300, 200, 400, 201, 204, 401, 202, 203}},
		{"a torn snapshot with a cycle of parents ends", []procEntry{
			{pid: 10, ppid: 12}, {pid: 11, ppid: 10}, {pid: 12, ppid: 11},
		}, 10, []int{11, 12}},
		{"a pid listed twice is listed once", []procEntry{
			{pid: 10, ppid: 1}, {pid: 11, ppid: 10}, {pid: 11, ppid: 10},
		}, 10, []int{11}},
		{"an empty table", nil, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for _, p := range descendantsIn(tt.table, tt.root) {
				got = append(got, p.pid)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("descendantsIn(root %d) = %v, want %v", tt.root, got, tt.want)
			}
		})
	}
	// The entries keep their start time: it is what names a process.
	for _, p := range descendantsIn(table, 200) {
		if i := slices.IndexFunc(table, func(q procEntry) bool { return q.pid == p.pid }); table[i] != p {
			t.Errorf("entry %+v, want %+v", p, table[i])
		}
	}
}
