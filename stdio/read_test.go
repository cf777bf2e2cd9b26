package stdio

import (
	"bytes"
	"log/slog"
	"os"
	"runtime"
	"testing"
)

// readLines runs the stdout reader of a Child over a real pipe on the
// calling goroutine, with data written into the pipe by another goroutine
// that allocates nothing, and returns what it delivered and the bytes the
// whole process allocated meanwhile (runtime.MemStats.TotalAlloc): a
// count, not a timing, and the same from run to run but for the small
// change a warm block pool makes (it can only lower it).
func readLines(t *testing.T, maxLine int, data []byte) (msgs [][]byte, owned []bool, over []Oversize, alloc uint64) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := &Child{opts: Options{
		MaxLineBytes: maxLine,
		OnMessage: func(msg []byte, own bool) {
			if !own {
				msg = bytes.Clone(msg)
			}
			msgs = append(msgs, msg)
			owned = append(owned, own)
		},
		OnOversize: func(o Oversize) { over = append(over, o) },
	}, stdout: r}
	c.log.Store(slog.New(slog.DiscardHandler))
	msgs, owned = make([][]byte, 0, 4), make([]bool, 0, 4)
	over = make([]Oversize, 0, 4)
	writeErr := make(chan error, 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		_, err := w.Write(data)
		w.Close()
		writeErr <- err
	}()
	c.readStdout()
	runtime.ReadMemStats(&after)
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	return msgs, owned, over, after.TotalAlloc - before.TotalAlloc
}

// bigJSONLine is a response of n bytes, id last, ending with a newline.
func bigJSONLine(n int) []byte {
	start, end := `{"jsonrpc":"2.0","result":{"text":"`, `"},"id":7}`
	b := make([]byte, 0, n+1)
	b = append(b, start...)
	b = append(b, bytes.Repeat([]byte("x"), n-len(start)-len(end))...)
	b = append(b, end...)
	return append(b, '\n')
}

// TestReadBigLineAllocation: a line far longer than the reader's buffer
// is handed over whole, owned, with room to change its id in place, for
// at most about twice its size in allocations: the blocks it is gathered
// in and the one buffer it is joined into. Grown by append, it cost over
// five times its size.
func TestReadBigLineAllocation(t *testing.T) {
	const size = 8 << 20
	line := bigJSONLine(size)
	small := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}` + "\n")
	msgs, owned, over, alloc := readLines(t, 16<<20, append(append(bytes.Clone(small), line...), small...))
	t.Logf("%.2f MiB allocated reading a %d MiB line (%.2fx)", float64(alloc)/(1<<20), size>>20, float64(alloc)/size)
	if len(msgs) != 3 || len(over) != 0 {
		t.Fatalf("got %d messages and %d oversize lines, want 3 messages", len(msgs), len(over))
	}
	if !bytes.Equal(msgs[1], line[:size]) || !bytes.Equal(msgs[0], small[:len(small)-1]) || !bytes.Equal(msgs[2], small[:len(small)-1]) {
		t.Fatalf("messages of %d, %d and %d bytes, want the small line, the %d-byte line, the small line", len(msgs[0]), len(msgs[1]), len(msgs[2]), size)
	}
	if owned[0] || !owned[1] || owned[2] {
		t.Errorf("owned = %v, want only the big line owned", owned)
	}
	if slack := cap(msgs[1]) - len(msgs[1]); slack < SpliceSlack {
		t.Errorf("the big line has %d bytes of spare capacity, want at least %d", slack, SpliceSlack)
	}
	if limit := uint64(size * 22 / 10); alloc > limit {
		t.Errorf("reading a %d MiB line allocated %.1f MiB, want at most %.1f MiB (2.2x)", size>>20, float64(alloc)/(1<<20), float64(limit)/(1<<20))
	}
}

// TestReadOversizeAllocation: skipping a line over the cap costs at most
// the cap (the reader cannot know the line is over until it has gathered
// that much) and then nothing more however long the line runs: its head
// and tail are kept, the rest dropped as it comes.
func TestReadOversizeAllocation(t *testing.T) {
	const capBytes, size = 1 << 20, 16 << 20
	line := bigJSONLine(size)
	msgs, _, over, alloc := readLines(t, capBytes, line)
	t.Logf("%.2f MiB allocated skipping a %d MiB line over a %d MiB cap", float64(alloc)/(1<<20), size>>20, capBytes>>20)
	if len(msgs) != 0 || len(over) != 1 {
		t.Fatalf("got %d messages and %d oversize lines, want one oversize line", len(msgs), len(over))
	}
	o := over[0]
	// The kept 4 KiB of the tail may include the newline, which is cut off.
	if o.Size != size || !bytes.Equal(o.Head, line[:oversizeKeep]) || !bytes.HasSuffix(line[:size], o.Tail) || len(o.Tail) < oversizeKeep-1 {
		t.Errorf("Oversize{Size: %d, Head: %d bytes, Tail: %d bytes}, want the size %d and its first and last %d bytes",
			o.Size, len(o.Head), len(o.Tail), size, oversizeKeep)
	}
	// The cap, the blocks' rounding up, and a little for the rest (the
	// head and tail, the log line).
	if limit := uint64(capBytes + 2*readBuf + 64<<10); alloc > limit {
		t.Errorf("skipping a %d MiB line over a %d MiB cap allocated %.2f MiB, want at most %.2f MiB",
			size>>20, capBytes>>20, float64(alloc)/(1<<20), float64(limit)/(1<<20))
	}
}

// BenchmarkReadStdout frames lines written into a real pipe: small ones,
// delivered from the reader's buffer, and big ones, gathered and joined.
func BenchmarkReadStdout(b *testing.B) {
	for _, tt := range []struct {
		name string
		line int
	}{{"200B", 200}, {"1MiB", 1 << 20}} {
		b.Run(tt.name, func(b *testing.B) {
			line := bigJSONLine(tt.line)
			const batch = 8 << 20 // bytes written per run of the reader
			per := max(1, batch/len(line))
			data := bytes.Repeat(line, per)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for range b.N {
				r, w, err := os.Pipe()
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				c := &Child{opts: Options{MaxLineBytes: 16 << 20, OnMessage: func([]byte, bool) { n++ }}, stdout: r}
				c.log.Store(slog.New(slog.DiscardHandler))
				go func() {
					_, _ = w.Write(data)
					w.Close()
				}()
				c.readStdout()
				r.Close()
				if n != per {
					b.Fatalf("%d messages, want %d", n, per)
				}
			}
		})
	}
}
