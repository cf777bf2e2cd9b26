package main

import (
	"net/http"
	"testing"
)

func TestSmokeHealthz(t *testing.T) {
	p := startBridge(t, nil)
	resp, err := http.Get(p.Base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
}
