package bridge

import (
	"slices"
	"strings"
	"testing"
)

func TestRedactArgv(t *testing.T) {
	for _, tt := range []struct {
		name string
		argv []string
		want []string
	}{
		{"nothing secret", []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/data", "--port", "3000", "-"},
			[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/data", "--port", "3000", "-"}},
		{"flag=value", []string{"server", "--api-key=s3cr3t", "--API_TOKEN=t0k", "--client-secret=x", "--password=p", "--db-pwd=q", "--verbose=true"},
			[]string{"server", "--api-key=****", "--API_TOKEN=****", "--client-secret=****", "--password=****", "--db-pwd=****", "--verbose=true"}},
		{"flag value", []string{"server", "--token", "t0k", "--name", "demo", "-auth", "hunter2"},
			[]string{"server", "--token", "****", "--name", "demo", "-auth", "****"}},
		{"a secret flag followed by a flag", []string{"server", "--no-auth", "--port", "1"},
			[]string{"server", "--no-auth", "--port", "1"}},
		{"a secret flag last", []string{"server", "--insecure-skip-auth"}, []string{"server", "--insecure-skip-auth"}},
		{"NAME=value", []string{"env", "GITHUB_TOKEN=ghx", "OPENAI_API_KEY=sk", "LOG_LEVEL=debug", "docker", "-e", "DB_PASSWORD=pw"},
			[]string{"env", "GITHUB_TOKEN=****", "OPENAI_API_KEY=****", "LOG_LEVEL=debug", "docker", "-e", "DB_PASSWORD=****"}},
		{"headers", []string{"npx", "mcp-remote", "https://h/mcp", "--header", "Authorization: Bearer abc", "--header", "X-Api-Key:abc", "--header", "Accept: text/plain"},
			[]string{"npx", "mcp-remote", "https://h/mcp", "--header", "Authorization: ****", "--header", "X-Api-Key:****", "--header", "Accept: text/plain"}},
		{"URLs", []string{"server", "postgres://app:pw@db:5432/app", "https://ghp@github.com/x.git", "--url=https://h/p?api_key=k&x=1&Token=t", "https://h/p?q=1", "localhost:8080"},
			[]string{"server", "postgres://****@db:5432/app", "https://****@github.com/x.git", "--url=https://h/p?api_key=****&x=1&Token=****", "https://h/p?q=1", "localhost:8080"}},
		{"token shapes", []string{"server", "sk-proj-0123456789abcdefghij", "ghp_0123456789abcdefghijABCDEF", "AKIAABCDEFGHIJKLMNOP", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", "skeleton"},
			[]string{"server", "****", "****", "****", "****", "skeleton"}},
		{"the program is shown as it is", []string{"/opt/key-tools/server"}, []string{"/opt/key-tools/server"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.argv)
			got := RedactArgv(tt.argv)
			if !slices.Equal(got, tt.want) {
				t.Errorf("RedactArgv(%q)\n got %q\nwant %q", tt.argv, got, tt.want)
			}
			if !slices.Equal(in, tt.argv) {
				t.Errorf("RedactArgv modified its argument: %q", tt.argv)
			}
		})
	}
}

// TestSnapshotArgv: the snapshot shows the whole command, its secrets
// masked.
func TestSnapshotArgv(t *testing.T) {
	b, err := New(Config{Command: []string{"true", "--api-key=s3cr3t-value", "--verbose"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close(t.Context()) })
	s := b.Snapshot()
	if want := []string{"true", "--api-key=****", "--verbose"}; !slices.Equal(s.Argv, want) || s.Command != "true" {
		t.Errorf("command %q, argv %q, want %q", s.Command, s.Argv, want)
	}
	if strings.Contains(strings.Join(s.For("someone").Argv, " "), "s3cr3t") {
		t.Error("the snapshot shows the secret")
	}
}
