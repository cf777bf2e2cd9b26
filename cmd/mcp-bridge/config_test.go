package main

// The command's tests name the settings as they were named here before
// internal/config took them: they check the binary against every field of
// Config (TestFlagErrorsShowNoValue, --help) and the deployment files
// against its variables. internal/config has the unit tests.

import (
	"io"

	"github.com/mcp-bridge/mcp-bridge/internal/config"
)

type (
	Config = config.Config
	Argv   = config.Argv
)

const envPrefix = config.EnvPrefix

// loadConfig loads the settings of args and the environment env, as the
// binary does.
func loadConfig(args []string, env map[string]string, usage io.Writer) (Config, error) {
	environ := make([]string, 0, len(env))
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	return config.Load(args, environ, usage)
}
