package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// watchSpec is one watch of the objects behind a view.
type watchSpec struct {
	// what names the watched objects in errors.
	what string
	// resourceVersion is where the watch starts: the version the view was
	// read at, so no change between reading and watching is missed.
	resourceVersion string
	// open starts the watch with the given options.
	open func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// minWatchLife keeps a server that closes watches at once from turning the
// reopen loop into a busy loop.
const minWatchLife = time.Second

// errWatchOpen wraps a failure to start a watch: a permission or
// configuration problem that retrying will not fix.
type errWatchOpen struct{ err error }

func (e *errWatchOpen) Error() string { return e.err.Error() }
func (e *errWatchOpen) Unwrap() error { return e.err }

// changeFeed signals changes to any of a set of watched objects. Signals
// are coalesced: many events while the reader reloads make one signal.
type changeFeed struct {
	changed chan struct{}
	failed  chan error
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// startFeed opens the watches. A watch the server closes is reopened from
// the last version seen; a watch that reports an error (typically 410 Gone)
// is reported on failed, and the reader reloads and starts a new feed.
func startFeed(ctx context.Context, specs []watchSpec) *changeFeed {
	ctx, cancel := context.WithCancel(ctx)
	f := &changeFeed{changed: make(chan struct{}, 1), failed: make(chan error, len(specs)), cancel: cancel}
	for _, spec := range specs {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			if err := f.follow(ctx, spec); err != nil && ctx.Err() == nil {
				f.failed <- err
			}
		}()
	}
	return f
}

// stop closes every watch and waits for the goroutines to end.
func (f *changeFeed) stop() {
	f.cancel()
	f.wg.Wait()
}

func (f *changeFeed) signal() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *changeFeed) follow(ctx context.Context, spec watchSpec) error {
	rv := spec.resourceVersion
	for {
		opened := time.Now()
		w, err := spec.open(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			return &errWatchOpen{fmt.Errorf("watching %s: %w", spec.what, err)}
		}
		rv, err = f.drain(ctx, w, rv)
		w.Stop()
		if err != nil || ctx.Err() != nil {
			return err
		}
		if time.Since(opened) < minWatchLife {
			select {
			case <-time.After(minWatchLife):
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// drain reads events until the watch ends and returns the last version seen.
func (f *changeFeed) drain(ctx context.Context, w watch.Interface, rv string) (string, error) {
	for {
		select {
		case <-ctx.Done():
			return rv, nil
		case ev, ok := <-w.ResultChan():
			if !ok {
				return rv, nil
			}
			if ev.Type == watch.Error {
				return rv, apierrors.FromObject(ev.Object)
			}
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
				rv = m.GetResourceVersion()
			}
			if ev.Type != watch.Bookmark {
				f.signal()
			}
		}
	}
}

// watchLoop calls reload after every change of the watched objects until
// reload says it is done or ctx ends. reload returns the watches for the
// state it read; a feed whose watch failed is replaced after a reload.
func watchLoop(ctx context.Context, specs []watchSpec, reload func() (done bool, specs []watchSpec, err error)) error {
	for {
		feed := startFeed(ctx, specs)
		restart := false
		for !restart {
			select {
			case <-ctx.Done():
				feed.stop()
				return ctx.Err()
			case err := <-feed.failed:
				var openErr *errWatchOpen
				if errors.As(err, &openErr) {
					feed.stop()
					return err
				}
				restart = true
			case <-feed.changed:
			}
			done, next, err := reload()
			if done || err != nil {
				feed.stop()
				return err
			}
			specs = next
		}
		feed.stop()
	}
}

// screen draws successive states of a view: in place on a terminal,
// appended otherwise, and only when the state looks different.
type screen struct {
	w        io.Writer
	terminal bool
	// separator goes between appended states: a blank line for text, "---"
	// for a YAML stream, nothing for a JSON stream.
	separator string
	last      string
	drawn     bool
	lastLine  string
}

// clearScreen moves the cursor home and clears the terminal.
const clearScreen = "\x1b[H\x1b[2J"

// newScreen draws on w; separator goes between the states it appends.
func newScreen(w io.Writer, terminal bool, separator string) *screen {
	return &screen{w: w, terminal: terminal, separator: separator}
}

// draw shows a full state.
func (s *screen) draw(text string) error {
	if s.drawn && text == s.last {
		return nil
	}
	var b strings.Builder
	switch {
	case s.terminal:
		b.WriteString(clearScreen)
	case s.drawn:
		b.WriteString(s.separator)
	}
	b.WriteString(text)
	s.last, s.drawn = text, true
	_, err := io.WriteString(s.w, b.String())
	return err
}

// line prints a progress line when it differs from the previous one.
func (s *screen) line(text string) error {
	if text == s.lastLine {
		return nil
	}
	s.lastLine = text
	_, err := fmt.Fprintln(s.w, text)
	return err
}
