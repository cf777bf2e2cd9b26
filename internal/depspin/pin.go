// Package depspin is temporary: it pins modules while the tree is built up.
package depspin
import (
 _ "github.com/go-chi/chi/v5"
 _ "github.com/golang-jwt/jwt/v5"
 _ "github.com/caarlos0/env/v11"
 _ "github.com/rs/cors"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/modelcontextprotocol/go-sdk/mcp"
)

