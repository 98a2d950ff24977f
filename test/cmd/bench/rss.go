package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssSampler records the resident set size of some processes at a fixed
// interval, so that a peak can be taken over any window afterwards. The
// kernel's own high-water mark (VmHWM) covers the whole life of a process,
// the start-up and the initial create included, which is not the window a
// rollout's peak is about.
type rssSampler struct {
	pids map[string]int // component name → pid
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	samples []rssSample
}

type rssSample struct {
	at time.Time
	kb map[string]int64 // component name → VmRSS in KiB; absent if unreadable
}

// sampleRSS starts sampling the named pids every interval until close.
func sampleRSS(pids map[string]int, interval time.Duration) *rssSampler {
	s := &rssSampler{pids: pids, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			s.take()
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// take reads every pid once, records the sample and returns it.
func (s *rssSampler) take() rssSample {
	sample := rssSample{at: time.Now(), kb: map[string]int64{}}
	for name, pid := range s.pids {
		if kb, err := readRSS(pid); err == nil {
			sample.kb[name] = kb
		}
	}
	s.mu.Lock()
	s.samples = append(s.samples, sample)
	s.mu.Unlock()
	return sample
}

// peak returns, per component, the largest sample taken in [from, to].
func (s *rssSampler) peak(from, to time.Time) map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for _, sample := range s.samples {
		if sample.at.Before(from) || sample.at.After(to) {
			continue
		}
		for name, kb := range sample.kb {
			out[name] = max(out[name], kb)
		}
	}
	return out
}

func (s *rssSampler) close() {
	close(s.stop)
	<-s.done
}

// readRSS returns the VmRSS of pid in KiB, from /proc/<pid>/status.
func readRSS(pid int) (int64, error) { return readStatusKB(pid, "VmRSS") }

// readStatusKB returns field (VmRSS, VmHWM: the peak RSS) of pid in KiB, from /proc/<pid>/status.
func readStatusKB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		// "VmRSS:	  123456 kB"
		if rest, ok := strings.CutPrefix(scanner.Text(), field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		}
	}
	if err := scanner.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("pid %d: no %s (exited?)", pid, field)
}

// mib formats KiB as MiB for the tables; "-" when there is no sample.
func mib(kb int64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(kb)/1024)
}
