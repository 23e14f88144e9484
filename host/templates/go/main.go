// {{name}}: a wasm-mcp plugin in Go. Each tool is a plain Go function,
// registered in init() with wasmmcp.Tool; wasmmcp/ (the helper) makes its
// input schema from the arguments' struct and speaks the plugin contract
// (wit/plugin.wit) for it. See README.md to build it.
package main

import (
	"errors"
	"strings"

	"{{lib}}/wasmmcp"
)

func main() {}

// GreetArgs are greet's arguments: their JSON names, types and
// descriptions make its input schema. A pointer, `omitempty` or a
// default makes one optional.
type GreetArgs struct {
	Name  string `json:"name" description:"Who to greet."`
	Times int    `json:"times" default:"1" description:"How many times, 1 to 10."`
	Shout *bool  `json:"shout" description:"Whether to shout."`
}

// greet returns text; a returned error is a tool error the model reads.
func greet(a GreetArgs) (string, error) {
	if a.Times < 1 || a.Times > 10 {
		return "", errors.New("times must be between 1 and 10")
	}
	text := strings.TrimSpace(strings.Repeat("Hello, "+a.Name+"! ", a.Times))
	if a.Shout != nil && *a.Shout {
		text = strings.ToUpper(text)
	}
	return text, nil
}

func init() {
	wasmmcp.Tool("greet", "Says hello to someone.", greet, wasmmcp.ReadOnly())
}
