package main

import (
	"io"
	"os"
	"strings"
	"time"
)

// progress is a one-line bar on a terminal, or a line per step otherwise.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	done  int
	start time.Time
}

func newProgress(w io.Writer, total int) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progress{w: w, tty: tty, total: total, start: time.Now()}
}

// step reports that the cell named name is starting.
func (p *progress) step(name string) {
	p.done++
	if !p.tty {
		logf(p.w, "[%d/%d] %s\n", p.done, p.total, name)
		return
	}
	const width = 30
	filled := width * (p.done - 1) / max(p.total, 1)
	if len(name) > 70 {
		name = "…" + name[len(name)-69:]
	}
	logf(p.w, "\r\033[K[%s%s] %d/%d %s %s",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		p.done, p.total, time.Since(p.start).Truncate(time.Second), name)
}

// finish ends the bar's line and says how long the cells took.
func (p *progress) finish() {
	if p.tty {
		logf(p.w, "\r\033[K")
	}
	logf(p.w, "%d cells in %s\n", p.done, time.Since(p.start).Truncate(time.Second))
}

// log prints a line without breaking the bar.
func (p *progress) log(format string, args ...any) {
	if p.tty {
		logf(p.w, "\r\033[K")
	}
	logf(p.w, format+"\n", args...)
}
