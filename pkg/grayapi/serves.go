package grayapi

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Request names one thing a person or a tool can ask of a gray rollout, as the controller lists
// what it serves (Status.Serves): the kubegray.io/resume requests by their action, and a plain
// unpause of the Deployment (`kubectl rollout resume`, Argo CD's built-in resume).
type Request string

const (
	// RequestNext is "<revision>:next" (kubectl gray resume): on to the next hold point.
	RequestNext Request = "next"
	// RequestFull is "<revision>:full" (kubectl gray resume --full): on to every replica.
	RequestFull Request = "full"
	// RequestAbort is "<revision>:abort" (kubectl gray abort).
	RequestAbort Request = "abort"
	// RequestUndo is "<revision>:undo": the controller writes the stable template back.
	RequestUndo Request = "undo"
	// RequestRetry is "<revision>:retry" (kubectl gray retry).
	RequestRetry Request = "retry"
	// RequestUnpause is spec.paused set to false: it ends the user's own pause, or, in instead
	// mode, our hold, moving the rollout on as "next" does.
	RequestUnpause Request = "unpause"
)

// Requests are every request, in the order Serves lists them.
var Requests = []Request{RequestNext, RequestFull, RequestAbort, RequestUndo, RequestRetry, RequestUnpause}

// Serves is the requests the controller would act on now, for the generation its status reports
// (Status.ObservedGeneration), in the order of Requests. Any other request it drops with a
// GrayResumeIgnored Warning that says why (an unpause it does not serve is refused by the
// takeover policy, or moves nothing). The tools that offer these requests (Argo CD's actions,
// `kubectl gray`, the dashboard) offer exactly this list, so what they offer is what the
// controller serves. It is always written, as a JSON array ([] for none).
type Serves []Request

// Has reports whether s lists r.
func (s Serves) Has(r Request) bool {
	return slices.Contains(s, r)
}

// MarshalJSON writes s as an array, [] when empty (never null: a reader tells "serves nothing"
// from a status written before the field existed).
func (s Serves) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]Request(s))
}

// String is s as a person reads it: "next, full, abort, undo", or "nothing".
func (s Serves) String() string {
	if len(s) == 0 {
		return "nothing"
	}
	names := make([]string, len(s))
	for i, r := range s {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// validate checks that s lists known requests once each, in the order of Requests: the order
// is what lets a reader without a JSON parser (Argo CD's Lua) match the list whole.
func (s Serves) validate() error {
	last := -1
	for _, r := range s {
		i := slices.Index(Requests, r)
		if i < 0 {
			return fmt.Errorf("serves lists %s, which is not one of next, full, abort, undo, retry, unpause", quoteToken(string(r)))
		}
		if i <= last {
			return fmt.Errorf("serves lists %s out of order or twice (the order is next, full, abort, undo, retry, unpause)", quoteToken(string(r)))
		}
		last = i
	}
	return nil
}

// ServesOf is the requests for which served reports true, in the order of Requests.
func ServesOf(served func(Request) bool) Serves {
	s := Serves{}
	for _, r := range Requests {
		if served(r) {
			s = append(s, r)
		}
	}
	return s
}
