// Package wasmmcp makes plain Go functions the tools of a wasm-mcp plugin.
//
//	type GreetArgs struct {
//		Name  string `json:"name" description:"Who to greet."`
//		Times int    `json:"times,omitempty" default:"1" description:"How many times."`
//	}
//
//	func greet(a GreetArgs) (string, error) { ... }
//
//	func init() { wasmmcp.Tool("greet", "Says hello to someone.", greet) }
//
// A tool function takes one struct (or nothing) and returns a result, and
// optionally an error. Its input schema comes from the struct's exported
// fields: their JSON names (`json:"..."`), their types (string, bool,
// integers, floats, slices, maps with string keys, nested structs as
// records, `any`), `description:"..."`, and `default:"..."` (a JSON value
// used when the argument is left out). A pointer field, a field with
// `omitempty` and a field with a default are optional; the others are
// required. The result is text when it is a string; a struct or a map is
// returned as JSON text and as structured content, with an output schema
// made from a struct's type; `Result` sets the text and the structured
// content apart. A returned error (or a panic) becomes a tool error whose
// text is its message, for the model to read.
//
// MCP Apps (interactive HTML views, extension `io.modelcontextprotocol/ui`)
// take a line each: ServeView serves a view, the View option names it as
// a tool's view, and ViewOnly keeps a tool for the views alone:
//
//	wasmmcp.ServeView("ui://files/tree", "tree", treeHTML)
//	wasmmcp.Tool("show_tree", "Shows a folder as a tree.", showTree, wasmmcp.View("ui://files/tree"))
//	wasmmcp.Tool("expand", "Lists a folder, for the tree view.", expand, wasmmcp.ViewOnly())
//
// A plugin that serves a view exports the contract's resources too: build
// it against the world wasm-mcp:plugin/tools-resources-plugin (the
// `--world` of build.sh's `wasm-tools component embed`).
package wasmmcp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Result is a tool result with its own text beside its structured content.
type Result struct {
	// Text is what the model reads.
	Text string
	// Structured is the structured content (a struct or a map), or nil.
	Structured any
}

// Option sets something of a tool besides its function.
type Option func(*tool)

// Title sets the tool's human-readable title.
func Title(title string) Option {
	return func(t *tool) { t.title = &title; t.hints().title = &title }
}

// ReadOnly says the tool does not modify its environment.
func ReadOnly() Option { return hint(func(a *annotations) **bool { return &a.readOnly }) }

// Destructive says the tool may perform destructive updates.
func Destructive() Option { return hint(func(a *annotations) **bool { return &a.destructive }) }

// Idempotent says calling the tool again with the same arguments has no
// further effect.
func Idempotent() Option { return hint(func(a *annotations) **bool { return &a.idempotent }) }

// OpenWorld says the tool interacts with an open world of external entities.
func OpenWorld() Option { return hint(func(a *annotations) **bool { return &a.openWorld }) }

// OutputSchema sets the JSON Schema of the structured content outright.
func OutputSchema(schema string) Option { return func(t *tool) { t.outputSchema = &schema } }

// Meta sets keys of the tool's `_meta`; View and ViewOnly merge theirs
// into its "ui" (a map[string]any there, when given).
func Meta(meta map[string]any) Option {
	return func(t *tool) {
		for key, value := range meta {
			if key == "ui" {
				if ui, ok := value.(map[string]any); ok {
					for k, v := range ui {
						t.ui()[k] = v
					}
					continue
				}
			}
			t.metaMap()[key] = value
		}
	}
}

// View names the tool's interactive view (MCP Apps): the `ui://` URI of
// a view the plugin serves with ServeView, as `_meta.ui.resourceUri`.
func View(uri string) Option {
	return func(t *tool) {
		if !strings.HasPrefix(uri, "ui://") {
			panic(fmt.Sprintf("wasmmcp: tool %q: its view is a ui:// URI, not %q", t.name, uri))
		}
		t.ui()["resourceUri"] = uri
	}
}

// ViewOnly makes the tool the views' alone (MCP Apps: `_meta.ui.visibility`
// is ["app"]): the model is not offered it; a view still calls it.
func ViewOnly() Option {
	return func(t *tool) { t.ui()["visibility"] = []string{"app"} }
}

func hint(field func(*annotations) **bool) Option {
	return func(t *tool) {
		yes := true
		*field(t.hints()) = &yes
	}
}

type annotations struct {
	title                                        *string
	readOnly, destructive, idempotent, openWorld *bool
}

type tool struct {
	name, description, inputSchema string
	title, outputSchema            *string
	annotations                    *annotations
	meta                           map[string]any // the tool's `_meta`, nil: none
	metaText                       *string        // meta as JSON
	function                       reflect.Value
	arguments                      reflect.Type // nil: the function takes none
	defaults                       map[string]json.RawMessage
}

func (t *tool) metaMap() map[string]any {
	if t.meta == nil {
		t.meta = map[string]any{}
	}
	return t.meta
}

// ui is the tool's `_meta.ui`, made when missing.
func (t *tool) ui() map[string]any {
	ui, ok := t.metaMap()["ui"].(map[string]any)
	if !ok {
		ui = map[string]any{}
		t.meta["ui"] = ui
	}
	return ui
}

func (t *tool) hints() *annotations {
	if t.annotations == nil {
		t.annotations = &annotations{}
	}
	return t.annotations
}

var (
	registered []*tool
	byName     = map[string]*tool{}
	errorType  = reflect.TypeOf((*error)(nil)).Elem()
	resultType = reflect.TypeOf(Result{})
)

// Tool registers `function` as the tool `name`, described by
// `description` for the model. It panics (as the plugin starts, so the
// host says why it did not load) when the function is not of a form the
// package documents.
func Tool(name, description string, function any, options ...Option) {
	if _, taken := byName[name]; taken {
		panic(fmt.Sprintf("wasmmcp: two tools are named %q", name))
	}
	t := &tool{name: name, description: description, function: reflect.ValueOf(function)}
	kind := t.function.Type()
	if kind.Kind() != reflect.Func || kind.NumIn() > 1 || kind.NumOut() < 1 || kind.NumOut() > 2 ||
		(kind.NumOut() == 2 && kind.Out(1) != errorType) {
		panic(fmt.Sprintf("wasmmcp: tool %q: want func(Args) Result or func(Args) (Result, error), got %s", name, kind))
	}
	properties, required := map[string]any{}, []string{}
	if kind.NumIn() == 1 {
		t.arguments = kind.In(0)
		if t.arguments.Kind() != reflect.Struct {
			panic(fmt.Sprintf("wasmmcp: tool %q: its argument must be a struct, not %s", name, t.arguments))
		}
		t.defaults = map[string]json.RawMessage{}
		properties, required = fields(t.arguments, 0, t.defaults, name)
	}
	t.inputSchema = encode(map[string]any{"type": "object", "properties": properties, "required": required})
	out := kind.Out(0)
	for out.Kind() == reflect.Pointer {
		out = out.Elem()
	}
	if out.Kind() == reflect.Struct && out != resultType {
		schema := schemaOf(out, 0, name)
		text := encode(schema)
		t.outputSchema = &text
	}
	for _, option := range options {
		option(t)
	}
	if t.meta != nil {
		text := encode(t.meta)
		t.metaText = &text
	}
	registered = append(registered, t)
	byName[name] = t
}

// ViewMIMEType is the MIME type of an MCP Apps view (SEP-1865), exactly.
const ViewMIMEType = "text/html;profile=mcp-app"

// ViewUI is a view's `_meta.ui` (MCP Apps): what the host's sandbox of
// the view allows it. Every field is optional.
type ViewUI struct {
	// CSP lists the origins the view may reach.
	CSP *CSP `json:"csp,omitempty"`
	// Permissions are the browser permissions the view asks for.
	Permissions *Permissions `json:"permissions,omitempty"`
	// Domain is the origin the view asks to run on.
	Domain string `json:"domain,omitempty"`
	// PrefersBorder asks the client to draw (true) or not draw (false) a
	// border around the view.
	PrefersBorder *bool `json:"prefersBorder,omitempty"`
}

// CSP is the origins a view may reach, each list for one directive.
type CSP struct {
	ConnectDomains  []string `json:"connectDomains,omitempty"`
	ResourceDomains []string `json:"resourceDomains,omitempty"`
	FrameDomains    []string `json:"frameDomains,omitempty"`
	BaseURIDomains  []string `json:"baseUriDomains,omitempty"`
}

// Permissions are the browser permissions a view asks for: each true one
// is written `{}`.
type Permissions struct {
	Camera, Microphone, Geolocation, ClipboardWrite bool
}

// MarshalJSON writes each permission asked for as `"name": {}`.
func (p Permissions) MarshalJSON() ([]byte, error) {
	asked := map[string]struct{}{}
	for name, yes := range map[string]bool{"camera": p.Camera, "microphone": p.Microphone,
		"geolocation": p.Geolocation, "clipboardWrite": p.ClipboardWrite} {
		if yes {
			asked[name] = struct{}{}
		}
	}
	return json.Marshal(asked)
}

type view struct {
	uri, name, html string
	meta            *string // `_meta` of the resource and of its contents
}

var (
	views     []*view
	viewByURI = map[string]*view{}
)

// ServeView serves an MCP Apps view: the resource at `uri` (a `ui://`
// URI), named `name`, whose MIME type is `text/html;profile=mcp-app` and
// whose contents are `html`. `ui` (at most one) is the view's `_meta.ui`,
// set on the listed resource and on the contents a read returns. A tool
// shows it with the View option. The plugin must export the contract's
// resources (the world wasm-mcp:plugin/tools-resources-plugin). It panics
// on a URI that is not `ui://`, or served twice.
//
//	wasmmcp.ServeView("ui://files/tree", "tree", treeHTML, wasmmcp.ViewUI{
//		CSP: &wasmmcp.CSP{ConnectDomains: []string{"https://api.example.com"}},
//	})
func ServeView(uri, name, html string, ui ...ViewUI) {
	if !strings.HasPrefix(uri, "ui://") {
		panic(fmt.Sprintf("wasmmcp: a view's URI is a ui:// URI, not %q", uri))
	}
	if _, taken := viewByURI[uri]; taken {
		panic(fmt.Sprintf("wasmmcp: two views at %q", uri))
	}
	if len(ui) > 1 {
		panic(fmt.Sprintf("wasmmcp: view %q: one ViewUI at most", uri))
	}
	v := &view{uri: uri, name: name, html: html}
	if len(ui) == 1 {
		text := encode(map[string]any{"ui": ui[0]})
		v.meta = &text
	}
	views = append(views, v)
	viewByURI[uri] = v
}

// fields makes the properties of a struct's exported fields, and the
// names of the required ones; `defaults` (when given) collects the
// defaults by JSON name.
func fields(of reflect.Type, depth int, defaults map[string]json.RawMessage, tool string) (map[string]any, []string) {
	properties, required := map[string]any{}, []string{}
	for i := 0; i < of.NumField(); i++ {
		field := of.Field(i)
		if !field.IsExported() {
			continue
		}
		name, optional := field.Name, field.Type.Kind() == reflect.Pointer
		if tag, ok := field.Tag.Lookup("json"); ok {
			parts := strings.Split(tag, ",")
			if parts[0] == "-" {
				continue
			}
			if parts[0] != "" {
				name = parts[0]
			}
			for _, p := range parts[1:] {
				optional = optional || p == "omitempty"
			}
		}
		schema := schemaOf(field.Type, depth+1, tool)
		if d, ok := field.Tag.Lookup("description"); ok {
			schema["description"] = d
		}
		if d, ok := field.Tag.Lookup("default"); ok {
			var value any
			if err := json.Unmarshal([]byte(d), &value); err != nil {
				panic(fmt.Sprintf("wasmmcp: tool %q: the default of %s is not JSON: %v", tool, name, err))
			}
			schema["default"] = value
			optional = true
			if defaults != nil {
				defaults[name] = json.RawMessage(d)
			}
		}
		properties[name] = schema
		if !optional {
			required = append(required, name)
		}
	}
	return properties, required
}

// schemaOf is the JSON Schema of values of a Go type.
func schemaOf(of reflect.Type, depth int, tool string) map[string]any {
	if depth > 32 {
		return map[string]any{}
	}
	switch of.Kind() {
	case reflect.Pointer:
		return schemaOf(of.Elem(), depth, tool)
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": schemaOf(of.Elem(), depth+1, tool)}
	case reflect.Map:
		if of.Key().Kind() != reflect.String {
			panic(fmt.Sprintf("wasmmcp: tool %q: a map's keys must be strings, not %s", tool, of.Key()))
		}
		return map[string]any{"type": "object", "additionalProperties": schemaOf(of.Elem(), depth+1, tool)}
	case reflect.Struct:
		properties, required := fields(of, depth, nil, tool)
		return map[string]any{"type": "object", "properties": properties, "required": required}
	case reflect.Interface:
		return map[string]any{}
	}
	panic(fmt.Sprintf("wasmmcp: tool %q: %s has no JSON Schema", tool, of))
}

func encode(value any) string {
	text, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	return string(text)
}

// What a call comes to: a result, or an error of the contract.
type outcome struct {
	text       string
	structured *string
	isError    bool
}

type failure struct {
	kind    uint8 // 0: invalid-params, 1: not-found
	message string
}

func call(name, arguments string) (result outcome, failed *failure) {
	t, ok := byName[name]
	if !ok {
		return outcome{}, &failure{1, "no tool named " + name}
	}
	var in []reflect.Value
	if t.arguments != nil {
		value := reflect.New(t.arguments)
		for field, d := range t.defaults {
			// A default goes in first; the arguments given replace it.
			if err := json.Unmarshal([]byte(`{"`+field+`":`+string(d)+`}`), value.Interface()); err != nil {
				return outcome{}, &failure{0, err.Error()}
			}
		}
		if err := json.Unmarshal([]byte(arguments), value.Interface()); err != nil {
			return outcome{}, &failure{0, "invalid arguments for tool " + name + ": " + err.Error()}
		}
		in = append(in, value.Elem())
	}
	defer func() {
		if p := recover(); p != nil {
			result = outcome{text: fmt.Sprint("panic: ", p), isError: true}
		}
	}()
	out := t.function.Call(in)
	if len(out) == 2 && !out[1].IsNil() {
		return outcome{text: out[1].Interface().(error).Error(), isError: true}, nil
	}
	return render(out[0].Interface()), nil
}

// render makes a tool's return value a result.
func render(value any) outcome {
	switch v := value.(type) {
	case string:
		return outcome{text: v}
	case Result:
		r := outcome{text: v.Text}
		if v.Structured != nil {
			s := encode(v.Structured)
			r.structured = &s
		}
		return r
	case *Result:
		if v == nil {
			return outcome{}
		}
		return render(*v)
	}
	text := encode(value)
	kind := reflect.TypeOf(value)
	for kind != nil && kind.Kind() == reflect.Pointer {
		kind = kind.Elem()
	}
	if kind != nil && (kind.Kind() == reflect.Struct || kind.Kind() == reflect.Map) && text != "null" {
		return outcome{text: text, structured: &text}
	}
	return outcome{text: text}
}
