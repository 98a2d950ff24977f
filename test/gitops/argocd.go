// Package gitops evaluates Deployments the way GitOps tools do, with their own code: Argo CD's
// health script and resource actions (manifests/argocd) in gopher-lua, loaded as Argo CD loads
// them; kstatus (sigs.k8s.io/cli-utils), which Flux uses by default; and Flux's CEL health
// check expressions (manifests/flux) through Flux's own evaluator.
package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

// Health is what a tool says of an object: a status and a message.
type Health struct {
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// ArgoCD holds the scripts of manifests/argocd.
type ArgoCD struct {
	health    string
	discovery string
	actions   map[string]string
	// mergeBuiltin is the snippet's mergeBuiltinActions, and builtinDiscovery the discovery
	// script of Argo CD's own actions of the kind, when loaded (LoadBuiltinActions).
	mergeBuiltin     bool
	builtinDiscovery string
}

// argoActions is the format of Argo CD's resource.customizations.actions.<group>_<kind> value.
type argoActions struct {
	MergeBuiltinActions bool   `json:"mergeBuiltinActions"`
	Discovery           string `json:"discovery.lua"`
	Definitions         []struct {
		Name   string `json:"name"`
		Action string `json:"action.lua"`
	} `json:"definitions"`
}

// LoadArgoCD reads health.lua and actions.yaml from dir.
func LoadArgoCD(dir string) (*ArgoCD, error) {
	health, err := os.ReadFile(filepath.Join(dir, "health.lua"))
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "actions.yaml"))
	if err != nil {
		return nil, err
	}
	var actions argoActions
	if err := yaml.UnmarshalStrict(raw, &actions); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "actions.yaml"), err)
	}
	a := &ArgoCD{health: string(health), discovery: actions.Discovery, actions: map[string]string{}, mergeBuiltin: actions.MergeBuiltinActions}
	for _, d := range actions.Definitions {
		a.actions[d.Name] = d.Action
	}
	return a, nil
}

// LoadBuiltinActions reads the discovery script of Argo CD's built-in actions of the kind from
// dir, their folder in Argo CD's source (resource_customizations/apps/Deployment/actions), so
// that Actions offers what Argo CD offers with both sets configured.
func (a *ArgoCD) LoadBuiltinActions(dir string) error {
	discovery, err := os.ReadFile(filepath.Join(dir, "discovery.lua"))
	if err != nil {
		return fmt.Errorf("argo cd built-in actions: %w", err)
	}
	a.builtinDiscovery = string(discovery)
	return nil
}

// ActionNames is the names of the snippet's actions.
func (a *ArgoCD) ActionNames() []string {
	names := make([]string, 0, len(a.actions))
	for name := range a.actions {
		names = append(names, name)
	}
	return names
}

// Health runs the health script on obj, as Argo CD's controller does.
func (a *ArgoCD) Health(obj map[string]any) (Health, error) {
	out, err := runLua(obj, a.health)
	if err != nil {
		return Health{}, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return Health{}, fmt.Errorf("the health script returned %T, not a table", out)
	}
	status, _ := m["status"].(string)
	message, _ := m["message"].(string)
	switch status {
	case "Healthy", "Progressing", "Suspended", "Degraded", "Missing", "Unknown":
		return Health{Status: status, Message: message}, nil
	}
	return Health{}, fmt.Errorf("the health script returned status %q, which Argo CD takes for Unknown", status)
}

// Actions runs the discovery scripts and returns each action's name and whether it is enabled,
// as Argo CD does (util/lua: GetResourceActionDiscovery, ExecuteResourceActionDiscovery): the
// snippet's script alone unless it sets mergeBuiltinActions, else it and then the built-in one
// (when loaded), an action named by both taken from the first.
func (a *ArgoCD) Actions(obj map[string]any) (map[string]bool, error) {
	scripts := []string{a.discovery}
	if a.mergeBuiltin && a.builtinDiscovery != "" {
		scripts = append(scripts, a.builtinDiscovery)
	}
	enabled := map[string]bool{}
	for i, script := range scripts {
		out, err := runLua(obj, script)
		if err != nil {
			return nil, fmt.Errorf("discovery script %d of %d: %w", i+1, len(scripts), err)
		}
		m, _ := out.(map[string]any) // an empty table comes back as a list: no action
		for name, v := range m {
			if _, taken := enabled[name]; taken {
				continue
			}
			fields, _ := v.(map[string]any) // {} comes back as a list: an enabled action
			disabled, _ := fields["disabled"].(bool)
			enabled[name] = !disabled
		}
	}
	return enabled, nil
}

// RunAction runs the named action on obj and returns the object it writes.
func (a *ArgoCD) RunAction(obj map[string]any, name string) (map[string]any, error) {
	script, ok := a.actions[name]
	if !ok {
		return nil, fmt.Errorf("no action %q", name)
	}
	out, err := runLua(obj, script)
	if err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("action %s returned %T, not an object", name, out)
	}
	return m, nil
}

// runLua runs script with obj as the global obj in the environment Argo CD gives health and
// action scripts (util/lua/lua.go: runLua): no standard library but package, base and table,
// a one-second limit. It returns the script's result converted to Go values.
func runLua(obj map[string]any, script string) (any, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return nil, err
	}
	return fromLua(l.Get(-1)), nil
}

// toLua converts a decoded JSON value the way Argo CD does (numbers of every Go type become
// Lua numbers, json.Number a string).
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for key, item := range v {
			t.RawSetH(lua.LString(key), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

// fromLua converts a Lua value back: a table with keys 1..n only is a list, any other table
// an object (an empty one a list, as Argo CD's JSON encoder has it).
func fromLua(v lua.LValue) any {
	switch v := v.(type) {
	case lua.LBool:
		return bool(v)
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return float64(v)
	case *lua.LTable:
		if n := v.MaxN(); n > 0 || countKeys(v) == 0 {
			list := make([]any, 0, n)
			for i := 1; i <= n; i++ {
				list = append(list, fromLua(v.RawGetInt(i)))
			}
			return list
		}
		m := map[string]any{}
		v.ForEach(func(k, item lua.LValue) { m[k.String()] = fromLua(item) })
		return m
	}
	return nil
}

func countKeys(t *lua.LTable) int {
	n := 0
	t.ForEach(func(lua.LValue, lua.LValue) { n++ })
	return n
}
