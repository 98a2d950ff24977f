package plugin

// The dashboard's HTTP server: the two pages, their JSON, the streams that push changes to
// them, and the actions.

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

//go:embed dashboard
var dashboardFiles embed.FS

// coalesceDelay is how long a stream waits after a change for the ones that come with it
// (a rollout step changes a ReplicaSet, its pods and the Deployment within milliseconds), so
// a page gets one update for them; well inside the second a change may take to show.
const coalesceDelay = 100 * time.Millisecond

// heartbeatInterval keeps idle streams open through proxies and lets a page see a dead server.
const heartbeatInterval = 15 * time.Second

// dashboardServer serves the pages of one `kubectl gray dashboard` run.
type dashboardServer struct {
	cache  *clusterCache
	client kubernetes.Interface
	// scope says which Deployments the pages show, e.g. "namespace default".
	scope    string
	readOnly bool
	token    string
	now      func() time.Time
	live     *liveShares
	list     *listHub
	pages    *template.Template
	// built are the rows last built, for rows (called by list alone, under its lock).
	built map[string]builtRow
}

func newDashboardServer(c *clusterCache, client kubernetes.Interface, scope, token string, readOnly bool, now func() time.Time) (*dashboardServer, error) {
	pages, err := template.ParseFS(dashboardFiles, "dashboard/*.html")
	if err != nil {
		return nil, err
	}
	s := &dashboardServer{cache: c, client: client, scope: scope, readOnly: readOnly, token: token, now: now, live: newLiveShares(), pages: pages}
	s.list = &listHub{build: s.rows, changes: newBroadcaster(), dirty: true}
	return s, nil
}

// handler routes the server's requests.
func (s *dashboardServer) handler() http.Handler {
	static, _ := fs.Sub(dashboardFiles, "dashboard")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page("list.html"))
	mux.HandleFunc("GET /rollouts/{namespace}/{name}", s.page("rollout.html"))
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /api/rollouts", s.getRows)
	mux.HandleFunc("GET /api/rollouts/{namespace}/{name}", s.getDetail)
	mux.HandleFunc("GET /api/stream", s.streamRows)
	mux.HandleFunc("GET /api/rollouts/{namespace}/{name}/stream", s.streamDetail)
	mux.HandleFunc("POST /api/rollouts/{namespace}/{name}/{action}", s.act)
	return mux
}

// pageData is what the pages' templates fill in. Token is empty in read-only mode.
type pageData struct {
	Token     string
	ReadOnly  bool
	Scope     string
	Namespace string
	Name      string
}

func (s *dashboardServer) page(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data := pageData{ReadOnly: s.readOnly, Scope: s.scope, Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
		if !s.readOnly {
			data.Token = s.token
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := s.pages.ExecuteTemplate(w, name, data); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}
}

// rows are the list page's rows by namespace/name, each as JSON. A row is a function of its
// Deployment and ReplicaSets alone, so one whose objects kept their resource versions is the
// row built before: a change rebuilds its own row, not the thousand others.
func (s *dashboardServer) rows() (map[string]string, error) {
	ds, err := s.cache.grayDeployments()
	if err != nil {
		return nil, err
	}
	rows := make(map[string]string, len(ds))
	built := make(map[string]builtRow, len(ds))
	for _, d := range ds {
		key := d.Namespace + "/" + d.Name
		rss := s.cache.ownedReplicaSets(d)
		versions := d.ResourceVersion
		for _, rs := range rss {
			versions += "," + rs.ResourceVersion
		}
		row, ok := s.built[key]
		if !ok || row.versions != versions {
			b, err := json.Marshal(newRolloutRow(d, rss, s.readOnly))
			if err != nil {
				return nil, err
			}
			// A row built again the same keeps its string, so streams compare it cheaply.
			if !ok || row.json != string(b) {
				row.json = string(b)
			}
			row.versions = versions
		}
		rows[key], built[key] = row.json, row
	}
	s.built = built
	return rows, nil
}

// builtRow is a row's JSON and the resource versions of the objects it was built from.
type builtRow struct {
	versions, json string
}

func (s *dashboardServer) getRows(w http.ResponseWriter, _ *http.Request) {
	rows, err := s.list.rows()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, actionAnswer{Error: err.Error()})
		return
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	items := make([]json.RawMessage, len(keys))
	for i, k := range keys {
		items[i] = json.RawMessage(rows[k])
	}
	writeJSON(w, http.StatusOK, map[string]any{"scope": s.scope, "items": items})
}

// detail is the rollout page of namespace/name, and false when the dashboard shows no such
// gray Deployment.
func (s *dashboardServer) detail(namespace, name string) (rolloutDetail, bool) {
	d, err := s.cache.deployments.Deployments(namespace).Get(name)
	if err != nil || !isGray(d) {
		return rolloutDetail{}, false
	}
	now := s.now()
	record := func(v StatusView) []sharePoint { return s.live.record(d.UID, v, now) }
	return newRolloutDetail(d, s.cache.related(d), record, s.readOnly, now), true
}

func (s *dashboardServer) getDetail(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	v, ok := s.detail(ns, name)
	if !ok {
		writeJSON(w, http.StatusNotFound, actionAnswer{Error: notShown(ns, name, s.scope)})
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func notShown(namespace, name, scope string) string {
	return fmt.Sprintf("deployment %s/%s is not a gray Deployment of this dashboard (%s)", namespace, name, scope)
}

// rowsUpdate is one message of the list stream: the rows that are new or changed since the
// last message, and the keys of the rows gone. Reset says to drop every row first.
type rowsUpdate struct {
	Reset  bool              `json:"reset"`
	Upsert []json.RawMessage `json:"upsert"`
	Remove []string          `json:"remove"`
}

func (s *dashboardServer) streamRows(w http.ResponseWriter, r *http.Request) {
	ch := s.list.changes.subscribe(anyDeployment)
	defer s.list.changes.unsubscribe(ch)
	sent := map[string]string{}
	update := func(reset bool) (any, bool, error) {
		rows, err := s.list.rows()
		if err != nil {
			return nil, false, err
		}
		u := rowsUpdate{Reset: reset, Upsert: []json.RawMessage{}, Remove: []string{}}
		for k, row := range rows {
			// Unchanged rows are the same string, so this is mostly a pointer compare.
			if last, ok := sent[k]; !ok || last != row {
				u.Upsert = append(u.Upsert, json.RawMessage(row))
				sent[k] = row
			}
		}
		for k := range sent {
			if _, ok := rows[k]; !ok {
				u.Remove = append(u.Remove, k)
				delete(sent, k)
			}
		}
		return u, reset || len(u.Upsert) > 0 || len(u.Remove) > 0, nil
	}
	stream(w, r, ch, "rows", update)
}

func (s *dashboardServer) streamDetail(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	ch := s.cache.changes.subscribe(ns + "/" + name)
	defer s.cache.changes.unsubscribe(ch)
	var last []byte
	update := func(bool) (any, bool, error) {
		v, ok := s.detail(ns, name)
		if !ok {
			return actionAnswer{Error: notShown(ns, name, s.scope)}, true, nil
		}
		// StatusText's ages change with the clock alone: a change elsewhere in the namespace
		// that leaves the rest as it was is no news for this page.
		text := v.StatusText
		v.StatusText = ""
		seen, err := json.Marshal(v)
		if err != nil {
			return nil, false, err
		}
		if string(seen) == string(last) {
			return nil, false, nil
		}
		last = seen
		v.StatusText = text
		return v, true, nil
	}
	stream(w, r, ch, "rollout", update)
}

// stream sends server-sent events named event to one page: the state at once, then after
// each change signalled on ch what update returns, while it says something changed.
func stream(w http.ResponseWriter, r *http.Request, ch <-chan struct{}, event string, update func(reset bool) (any, bool, error)) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	// A page reconnects a second after the stream drops, and is sent the whole state again.
	if _, err := fmt.Fprint(w, "retry: 1000\n\n"); err != nil {
		return
	}
	send := func(reset bool) error {
		name := event
		msg, changed, err := update(reset)
		if err != nil {
			name, msg, changed = "failure", actionAnswer{Error: err.Error()}, true
		}
		if !changed {
			return nil
		}
		b, err := json.Marshal(msg)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send(true); err != nil {
		return
	}
	heartbeat := time.NewTicker(heartbeatInterval)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-heartbeat.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case <-ch:
			if !sleepCtx(r.Context(), coalesceDelay) {
				return
			}
			// The changes that came while waiting are in this update too.
			select {
			case <-ch:
			default:
			}
			if err := send(false); err != nil {
				return
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// actionAnswer is the JSON answer of an action, or an error of any request.
type actionAnswer struct {
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// act runs an action with the user's credentials through the verb's own core.
func (s *dashboardServer) act(w http.ResponseWriter, r *http.Request) {
	ns, name, action := r.PathValue("namespace"), r.PathValue("name"), r.PathValue("action")
	if s.readOnly {
		writeJSON(w, http.StatusForbidden, actionAnswer{Error: "refused: the dashboard runs with --read-only"})
		return
	}
	if d, err := s.cache.deployments.Deployments(ns).Get(name); err != nil || !isGray(d) {
		writeJSON(w, http.StatusNotFound, actionAnswer{Error: notShown(ns, name, s.scope)})
		return
	}
	ctx := r.Context()
	var message string
	var err error
	switch action {
	case actionResume, actionResumeFull:
		message, _, err = sendRequest(ctx, s.client, ns, name, cmdutil.DryRunNone, resumeDecision(action == actionResumeFull))
	case actionAbort:
		message, _, err = sendRequest(ctx, s.client, ns, name, cmdutil.DryRunNone, decideAbort)
	case actionRetry:
		message, _, err = sendRequest(ctx, s.client, ns, name, cmdutil.DryRunNone, decideRetry)
	case actionUndo:
		var res undoResult
		if res, err = undoRevision(ctx, s.client, ns, name, cmdutil.DryRunNone, 0); err == nil {
			message = res.operation
			if res.applyManaged {
				message += fmt.Sprintf("; it is managed with 'kubectl apply', so apply the configuration of revision %d next, or the next apply undoes the rollback", res.target)
			}
		}
	default:
		writeJSON(w, http.StatusNotFound, actionAnswer{Error: fmt.Sprintf("unknown action %q: use %s", action, strings.Join([]string{actionResume, actionResumeFull, actionAbort, actionRetry, actionUndo}, ", "))})
		return
	}
	if err != nil {
		writeJSON(w, actionStatus(err), actionAnswer{Error: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, actionAnswer{Message: fmt.Sprintf("deployment.apps/%s %s", name, message)})
}

// actionStatus is the HTTP status of a failed action: the API server's own for its refusals
// (RBAC, admission, a conflict), 409 for a verb's refusal of the rollout's state.
func actionStatus(err error) int {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code != 0 {
		return int(status.Status().Code)
	}
	return http.StatusConflict
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// listHub shares the list page's rows among its streams: built once per change, however many
// pages are open, and only while one is.
type listHub struct {
	build   func() (map[string]string, error)
	changes *broadcaster

	mu    sync.Mutex
	dirty bool
	last  map[string]string
}

// run marks the rows stale on every change signalled by rowChanges and wakes the streams.
func (h *listHub) run(ctx context.Context, rowChanges *broadcaster) {
	ch := rowChanges.subscribe(anyDeployment)
	defer rowChanges.unsubscribe(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			h.mu.Lock()
			h.dirty = true
			h.mu.Unlock()
			h.changes.notify(anyDeployment)
		}
	}
}

// rows are the current rows, rebuilt if anything changed since they were last built.
func (h *listHub) rows() (map[string]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.dirty {
		return h.last, nil
	}
	rows, err := h.build()
	if err != nil {
		return nil, err
	}
	h.last, h.dirty = rows, false
	return rows, nil
}
