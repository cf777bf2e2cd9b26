//go:build !unix

package registry

// alive cannot tell here without a handle on the process: the tests that
// use it check the rest.
func alive(int) bool { return false }
