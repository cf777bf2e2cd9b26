package launch

// run is never reached on Windows: stdio applies a server's limits
// through its Job Object and checks its pin itself, with no launcher.
func run(p *Plan, argv, env []string, rep reporter) int {
	return rep.fail(KindSandbox, "no sandbox launcher on Windows")
}
