package stdio

import (
	"errors"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// fakeProbe gives the strategies in allowed (with their reasons), says
// "Linux only" and the like for those of other systems, and fails the rest
// with a reason of this system's.
func fakeProbe(allowed map[Containment]string, other map[Containment]string) func(Containment) (string, error) {
	return func(c Containment) (string, error) {
		if why, ok := allowed[c]; ok {
			return why, nil
		}
		if goos, ok := other[c]; ok {
			return "", errOtherSystem{c, goos}
		}
		return "", errors.New("no " + string(c) + " here")
	}
}

// TestChoose: auto picks the best strategy each system allows, and says
// why the better ones are not to be had, leaving out those of other
// systems; a strategy asked for by name is had or refused.
func TestChoose(t *testing.T) {
	linux := map[Containment]string{ContainJobObject: "Windows"}
	darwin := map[Containment]string{ContainPIDNamespace: "Linux", ContainCgroup: "Linux", ContainJobObject: "Windows"}
	windows := map[Containment]string{ContainPIDNamespace: "Linux", ContainCgroup: "Linux", ContainProcessGroup: "Linux and macOS"}
	group := map[Containment]string{ContainProcessGroup: "a process group per child"}
	tests := []struct {
		name    string
		probe   func(Containment) (string, error)
		want    Containment
		got     Containment
		why     string // the whole reason
		wantErr string // a part of the error; "" for none
	}{
		{"Linux with everything: a PID namespace", fakeProbe(map[Containment]string{
			ContainPIDNamespace: "ns", ContainCgroup: "cg", ContainProcessGroup: "pg"}, linux),
			ContainAuto, ContainPIDNamespace, "ns", ""},
		{"Linux in Docker: a process group, and why not better", fakeProbe(group, linux),
			ContainAuto, ContainProcessGroup, "a process group per child; no pid-namespace here; no cgroup here", ""},
		{"macOS: a process group, nothing said of Linux or Windows", fakeProbe(group, darwin),
			ContainAuto, ContainProcessGroup, "a process group per child", ""},
		{"Windows: a job", fakeProbe(map[Containment]string{ContainJobObject: "a Job Object per child"}, windows),
			ContainAuto, ContainJobObject, "a Job Object per child", ""},
		{"Windows without jobs: nothing, and why", fakeProbe(nil, windows),
			ContainAuto, "", "", "no job-object here"},
		{"asked by name", fakeProbe(group, darwin),
			ContainProcessGroup, ContainProcessGroup, "a process group per child (as asked)", ""},
		{"another system's, by name", fakeProbe(group, darwin),
			ContainCgroup, "", "", "cgroup: Linux only"},
		{"Linux's job-object, by name", fakeProbe(group, linux),
			ContainJobObject, "", "", "job-object: Windows only"},
		{"unknown", fakeProbe(group, darwin),
			"chroot", "", "", `unknown containment "chroot"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why, err := choose(tt.want, tt.probe)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("choose(%q) = %q, %q, %v; want an error with %q", tt.want, got, why, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.got || why != tt.why {
				t.Errorf("choose(%q) = %q, %q, %v; want %q, %q", tt.want, got, why, err, tt.got, tt.why)
			}
		})
	}
}

// TestProbeOtherSystems: this system's probe calls the strategies of
// other systems theirs, so auto passes over them in silence and asking
// for one by name says where it is to be had.
func TestProbeOtherSystems(t *testing.T) {
	others := map[string][]Containment{
		"linux":   {ContainJobObject},
		"darwin":  {ContainPIDNamespace, ContainCgroup, ContainJobObject},
		"windows": {ContainPIDNamespace, ContainCgroup, ContainProcessGroup},
	}[runtime.GOOS]
	for _, c := range Containments[1:] {
		_, err := probe(c)
		_, isOther := errors.AsType[errOtherSystem](err)
		if want := slices.Contains(others, c); isOther != want {
			t.Errorf("probe(%q) = %v: another system's %v, want %v", c, err, isOther, want)
		}
	}
	// auto always finds one: the last resort of each system works.
	if got, why, err := choose(ContainAuto, probe); err != nil || slices.Contains(others, got) {
		t.Errorf("auto = %q (%s), %v", got, why, err)
	}
}
