package config

// The rules of who may connect and who sees what. Whether the named
// variables hold usable secrets is checked where they are read (Verifier,
// MetricsAuth), not here.

import (
	"net/url"
	"strings"

	"github.com/mcp-bridge/mcp-bridge/approval"
	"github.com/mcp-bridge/mcp-bridge/auth"
	"github.com/mcp-bridge/mcp-bridge/httpapi"
)

// jwtKeys counts the JWT key sources given: one is right, and more is
// refused (checkOneJWTKey).
func (c *Config) jwtKeys() int {
	n := 0
	for _, set := range []string{c.JWTSecretEnv, c.JWTPublicKey, c.JWKSURL} {
		if set != "" {
			n++
		}
	}
	return n
}

// authenticates: some authentication is asked for.
func (c *Config) authenticates() bool { return len(c.TokenEnvs) > 0 || c.jwtKeys() > 0 }

func checkTokenEnvs(c *Config, bad report) {
	for i, name := range c.TokenEnvs {
		switch {
		case !envName.MatchString(name):
			bad("TokenEnvs", "%snot a valid variable name: the flag takes the NAME of a variable that holds a token, never the token", entry(i, len(c.TokenEnvs)))
		case strings.HasPrefix(name, EnvPrefix):
			bad("TokenEnvs", "%svariables named %s* are the bridge's settings, not tokens", entry(i, len(c.TokenEnvs)), EnvPrefix)
		}
	}
}

func checkJWTSecretEnv(c *Config, bad report) {
	switch n := c.JWTSecretEnv; {
	case n != "" && !envName.MatchString(n):
		bad("JWTSecretEnv", "not a valid variable name: the flag takes the NAME of a variable that holds the secret, never the secret")
	case strings.HasPrefix(n, EnvPrefix):
		bad("JWTSecretEnv", "variables named %s* are the bridge's settings, not secrets", EnvPrefix)
	}
}

// checkOneJWTKey: one key source, one family of algorithms. An HMAC
// secret next to public keys invites algorithm confusion.
func checkOneJWTKey(c *Config, bad report) {
	if c.jwtKeys() > 1 {
		bad("JWTSecretEnv", "give one JWT key source: --jwt-secret-env, --jwt-public-key or --jwks-url")
	}
}

func checkJWTIssuer(c *Config, bad report) {
	if c.jwtKeys() == 1 && c.JWTIssuer == "" {
		bad("JWTIssuer", "a JWT key needs the issuer whose tokens it verifies")
	}
}

func checkJWTAudience(c *Config, bad report) {
	if c.jwtKeys() == 1 && len(c.JWTAudiences) == 0 && c.PublicURL == "" {
		bad("JWTAudiences", "JWTs must be checked against this server's URL: set --public-url (or --jwt-audience)")
	}
}

// checkJWTNeedsKey: a JWT setting without a key would verify nothing;
// the first one given is told.
func checkJWTNeedsKey(c *Config, bad report) {
	if c.jwtKeys() > 0 {
		return
	}
	const why = "the JWT settings need a key: --jwt-secret-env, --jwt-public-key or --jwks-url"
	switch {
	case c.JWTIssuer != "":
		bad("JWTIssuer", why)
	case len(c.JWTAudiences) > 0:
		bad("JWTAudiences", why)
	case len(c.RequireScopes) > 0:
		bad("RequireScopes", why)
	}
}

func checkAudiences(c *Config, bad report) {
	for _, a := range c.JWTAudiences {
		if a == "" {
			bad("JWTAudiences", "an audience is empty")
		}
	}
}

func checkPublicURL(c *Config, bad report) {
	if c.PublicURL == "" {
		return
	}
	if _, err := httpapi.CanonicalURL(c.PublicURL); err != nil {
		bad("PublicURL", "%v", err)
	}
}

func checkAuthServers(c *Config, bad report) {
	for i, s := range c.AuthServers {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("AuthServers", "%snot an absolute http(s) URL", entry(i, len(c.AuthServers)))
		}
	}
}

func checkAuthServersNeedAuth(c *Config, bad report) {
	if len(c.AuthServers) > 0 && !c.authenticates() {
		bad("AuthServers", "authorization servers mean nothing without authentication (--token-env or a JWT key)")
	}
}

func checkToolRules(c *Config, bad report) {
	for _, list := range []struct {
		field string
		rules []string
	}{{"ToolAllow", c.ToolAllow}, {"ToolDeny", c.ToolDeny}} {
		for i, r := range list.rules {
			if _, err := auth.ParseToolRule(r, false); err != nil {
				bad(list.field, "%s%v", entry(i, len(list.rules)), err)
			}
		}
	}
}

func checkAuditArguments(c *Config, bad report) {
	if c.AuditArguments && c.AuditLog == "" {
		bad("AuditArguments", "there is no --audit-log to add them to")
	}
}

func checkAdmins(c *Config, bad report) {
	for i, a := range c.Admins {
		if _, err := auth.ParseSubject(a); err != nil {
			bad("Admins", "%s%v", entry(i, len(c.Admins)), err)
		}
	}
}

func checkAdminsNeedAuth(c *Config, bad report) {
	if len(c.Admins) > 0 && !c.authenticates() {
		bad("Admins", "admins mean nothing without authentication (--token-env or a JWT key): the one anonymous principal sees everything")
	}
}

func checkRegistryAdmins(c *Config, bad report) {
	for i, a := range c.RegistryAdmins {
		if _, err := auth.ParseSubject(a); err != nil {
			bad("RegistryAdmins", "%s%v", entry(i, len(c.RegistryAdmins)), err)
		}
	}
}

// A registry admin starts any command on the bridge's machine: never the
// anonymous principal of a bridge without authentication.
func checkRegistryAdminsNeedAuth(c *Config, bad report) {
	if len(c.RegistryAdmins) > 0 && !c.authenticates() {
		bad("RegistryAdmins", "changing the servers needs authentication (--token-env or a JWT key): without it, anyone who reaches the port could start any command")
	}
}

func checkRegistryAdminsNeedConfig(c *Config, bad report) {
	if len(c.RegistryAdmins) > 0 && c.ConfigFile == "" {
		bad("RegistryAdmins", "the registry API changes the servers of a --config file: give --config")
	}
}

func checkMetricsPublic(c *Config, bad report) {
	if c.MetricsPublic && c.MetricsTokenEnv != "" {
		bad("MetricsPublic", "contradicts --metrics-token-env: /metrics either needs its token or is open; give one of the two")
	}
}

func checkMetricsTokenEnv(c *Config, bad report) {
	if n := c.MetricsTokenEnv; n != "" && (!envName.MatchString(n) || strings.HasPrefix(n, EnvPrefix)) {
		bad("MetricsTokenEnv", "not a valid variable name outside %s*: the flag takes the NAME of a variable that holds a token, never the token", EnvPrefix)
	}
}

func checkApproveRules(c *Config, bad report) {
	for i, r := range c.ToolApprove {
		if _, err := approval.ParseRule(r); err != nil {
			bad("ToolApprove", "%s%v", entry(i, len(c.ToolApprove)), err)
		}
	}
}

func checkApprovers(c *Config, bad report) {
	for i, a := range c.Approvers {
		if _, err := auth.ParseSubject(a); err != nil {
			bad("Approvers", "%s%v", entry(i, len(c.Approvers)), err)
		}
	}
}

// An approver lets calls reach a server that the operator held back:
// never the anonymous principal of a bridge without authentication.
func checkApproversNeedAuth(c *Config, bad report) {
	if len(c.Approvers) > 0 && !c.authenticates() {
		bad("Approvers", "approving calls needs authentication (--token-env or a JWT key): without it, anyone who reaches the port could approve any call")
	}
}

// With the caller never asked, only an approver can say yes.
func checkSeparateApprover(c *Config, bad report) {
	if c.ApprovalSeparateApprover && len(c.Approvers) == 0 {
		bad("ApprovalSeparateApprover", "nobody could approve a call: the caller's user is the caller, and no --approver is set")
	}
}

// A --config server's trust is its own ("trusted"), never a flag's for
// all of them.
func checkTrustAnnotations(c *Config, bad report) {
	if c.TrustAnnotations && c.ConfigFile != "" {
		bad("TrustAnnotations", `with --config, mark each server whose annotations you trust with "trusted": true in the file`)
	}
}
