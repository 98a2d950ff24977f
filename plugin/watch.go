package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// watchSpec is one watch of the objects behind a view.
type watchSpec struct {
	// what names the watched objects in errors.
	what string
	// resourceVersion is where the watch starts: the version the view was
	// read at, so no change between reading and watching is missed.
	resourceVersion string
	// open starts the watch with the given options.
	open cache.WatchFuncWithContext
}

// errExpired marks a watch whose resource version the API server no longer
// has (410 Gone): the reader reloads and watches from the new version.
var errExpired = errors.New("watch expired")

// changeFeed signals changes to any of a set of watched objects. Signals
// are coalesced: many events while the reader reloads make one signal.
type changeFeed struct {
	changed chan struct{}
	failed  chan error
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// startFeed opens the watches, each a client-go RetryWatcher: a watch the
// API server closes (its timeout, a restart, a dropped connection) is
// reopened from the last version seen, so a wait never ends early. What a
// RetryWatcher cannot carry on from ends on failed: errExpired when the
// version is gone, so that the reader reloads, or an error that retrying
// will not fix (forbidden, unauthorized).
func startFeed(ctx context.Context, specs []watchSpec) *changeFeed {
	ctx, cancel := context.WithCancel(ctx)
	f := &changeFeed{changed: make(chan struct{}, 1), failed: make(chan error, len(specs)), cancel: cancel}
	for _, spec := range specs {
		rw, err := watchtools.NewRetryWatcherWithContext(ctx, spec.resourceVersion, &cache.ListWatch{WatchFuncWithContext: spec.open})
		if err != nil {
			f.failed <- fmt.Errorf("watching %s: %w", spec.what, err)
			continue
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer rw.Stop()
			if err := f.follow(rw); err != nil && ctx.Err() == nil {
				f.failed <- fmt.Errorf("watching %s: %w", spec.what, err)
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

// follow signals each event of w until it ends: when the feed stops, or
// with the error the RetryWatcher gave up on.
func (f *changeFeed) follow(w *watchtools.RetryWatcher) error {
	for ev := range w.ResultChan() {
		if ev.Type != watch.Error {
			f.signal()
			continue
		}
		err := apierrors.FromObject(ev.Object)
		if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
			return fmt.Errorf("%w: %w", errExpired, err)
		}
		return err
	}
	return nil
}

// watchLoop calls reload after every change of the watched objects until
// reload says it is done or ctx ends. reload returns the watches for the
// state it read; a feed whose resource version expired is replaced after a
// reload, and any other failure of a watch ends the loop.
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
				if !errors.Is(err, errExpired) {
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
