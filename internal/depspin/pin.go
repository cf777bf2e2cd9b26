// Package depspin is temporary: it keeps the design card's modules in
// go.mod while work on the issues that use them is in progress.
package depspin

import (
	_ "github.com/MicahParks/keyfunc/v3"
	_ "github.com/compose-spec/compose-go/v2/cli"
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/r3labs/sse/v2"
	_ "github.com/rs/cors"
)
