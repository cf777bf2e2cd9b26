package endpoint

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestDocFigures: the figures docs/aggregate.md gives of the endpoint are
// the code's.
func TestDocFigures(t *testing.T) {
	b, err := os.ReadFile("../../docs/aggregate.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.Join(strings.Fields(string(b)), " ")
	for _, want := range []string{
		fmt.Sprintf("at most %d times in a row without a request of the client's between", maxRevivals),
		fmt.Sprintf("keeps the last %d events a client was sent (at most %d MiB), as it keeps %d waiting", maxWaiting, maxSentBytes>>20, maxWaiting),
		fmt.Sprintf("a resume waits up to %g s", resumeWait.Seconds()),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/aggregate.md does not say %q", want)
		}
	}
}
