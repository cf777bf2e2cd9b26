package bridge

import "testing"

// BenchmarkParseRead measures a client's request as the bridge takes it:
// ParseBody, then the members a POST reads on its way (the tool and its
// arguments for the policy and the audit log, the progress token, and for
// a 2026-07-28 request the protocol version, capabilities and client in
// _meta, a retry's state). BenchmarkParseBody measures the parse alone.
func BenchmarkParseRead(b *testing.B) {
	for _, bc := range []struct{ name, body string }{
		{"call", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello","count":3},"_meta":{"progressToken":12}}}`},
		{"modern-call", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello","count":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{"form":{}}}}}}`},
	} {
		body := []byte(bc.body)
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				msgs, _, err := ParseBody(body)
				if err != nil {
					b.Fatal(err)
				}
				m := &msgs[0]
				if m.Param("name") == nil || m.Param("arguments") == nil {
					b.Fatal("no tool")
				}
				_ = m.progressToken()
				if m.metaMember(metaProtocolVersion) != nil {
					_ = m.metaMember(metaClientCaps)
					_ = m.metaMember(metaClientInfo)
					_ = m.Param("requestState")
					_ = m.Param("inputResponses")
				}
			}
		})
	}
}
