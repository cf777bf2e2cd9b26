package stdio

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// longLine gathers a line longer than the reader's buffer. The reader
// hands out a line's chunks in that buffer, so each must be copied before
// the next read; they are copied into fixed-size blocks and joined once,
// at the end of the line, into a buffer of exactly its size (plus slack),
// which is handed over. Growing one buffer by append instead, as this
// reader once did, allocates some five times the line: Go grows a big
// slice by a quarter at a time, holding the old and the new array at once
// at each step.
type longLine struct {
	blocks []*[readBuf]byte
	n      int // bytes gathered
}

// blockPool holds the blocks, shared by every child's reader: a burst of
// big messages reuses the blocks of the last one rather than allocating
// its size again.
var blockPool = sync.Pool{New: func() any { return new([readBuf]byte) }}

// add appends chunk to the line.
func (l *longLine) add(chunk []byte) {
	for len(chunk) > 0 {
		off := l.n % readBuf
		if off == 0 {
			l.blocks = append(l.blocks, blockPool.Get().(*[readBuf]byte))
		}
		k := copy(l.blocks[len(l.blocks)-1][off:], chunk)
		chunk = chunk[k:]
		if l.n < collectAt && l.n+k >= collectAt {
			collect()
		}
		l.n += k
	}
}

// appendRange appends bytes [from, to) of the line gathered so far
// followed by last (the chunk that ends it) to dst.
func (l *longLine) appendRange(dst []byte, from, to int, last []byte) []byte {
	for from < to && from < l.n {
		i := from / readBuf
		k := min(to, l.n, (i+1)*readBuf)
		dst = append(dst, l.blocks[i][from-i*readBuf:k-i*readBuf]...)
		from = k
	}
	if from < to {
		dst = append(dst, last[from-l.n:to-l.n]...)
	}
	return dst
}

// join returns the line gathered so far followed by last in one new
// buffer with slack bytes of spare capacity, and releases the blocks.
func (l *longLine) join(last []byte, slack int) []byte {
	n := l.n + len(last)
	line := l.appendRange(make([]byte, 0, n+slack), 0, n, last)
	l.release()
	return line
}

// release returns the blocks to the pool and empties the line.
func (l *longLine) release() {
	for i, b := range l.blocks {
		blockPool.Put(b)
		l.blocks[i] = nil
	}
	l.blocks = l.blocks[:0]
	l.n = 0
}

// collectAt is the size at which a line being gathered starts a garbage
// collection (collect).
const collectAt = 8 << 20

// collecting is set while collect runs.
var collecting atomic.Bool

// collect runs a garbage collection, when a line reaches collectAt bytes,
// so that the memory of the big messages before it, written out by now
// and garbage, is reused for this one rather than added to. Left to
// itself, the GC lets the heap grow to twice what was live at its last
// cycle, and what is live at a cycle during a big message is that message
// twice (its blocks and its joined copy): 40 MiB answers one after the
// other then held some 4 times their size in RSS, where with this they
// hold about 2 times. It costs one cycle per big line, on that child's
// reader goroutine, off the path of every message under collectAt; and
// while one runs, the readers of other big lines do not start another.
func collect() {
	if collecting.CompareAndSwap(false, true) {
		runtime.GC()
		collecting.Store(false)
	}
}
