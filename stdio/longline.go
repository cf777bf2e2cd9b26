package stdio

import "sync"

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
