package tool

import (
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// MCP Apps (the io.modelcontextprotocol/ui extension): a tool names the
// interactive view of its results, a ui:// resource of its server whose
// MIME type is AppMIME, in _meta.ui.resourceUri (or the deprecated flat
// _meta["ui/resourceUri"]). The Manager lists these per server
// (agent.ToolServer.Apps); the bundled UI reads the resource through
// ReadResource and renders it in the tool card (docs/ARCHITECTURE.md).

// AppMIME is the MIME type of an MCP App's HTML.
const AppMIME = "text/html;profile=mcp-app"

// maxAppBytes caps the HTML of an MCP App read through ReadResource (a
// bundled single-file app is larger than a tool result the model reads).
const maxAppBytes = 4 << 20

// appURI is the ui:// resource t names as its app, or "".
func appURI(t mcp.Tool) string {
	if t.Meta == nil {
		return ""
	}
	uri, _ := toolUI(t)["resourceUri"].(string)
	if uri == "" {
		uri, _ = t.Meta.AdditionalFields["ui/resourceUri"].(string)
	}
	if !strings.HasPrefix(uri, "ui://") || len(uri) > 2048 {
		return ""
	}
	return uri
}

// isAppMIME reports whether a resource's MIME type is an MCP App's.
func isAppMIME(m string) bool {
	return strings.EqualFold(strings.ReplaceAll(m, " ", ""), AppMIME)
}

// appMeta is the _meta.ui of an app's resource contents, or nil.
func appMeta(meta map[string]any) map[string]any {
	ui, _ := meta["ui"].(map[string]any)
	return ui
}

// visibility is who may call t, by its _meta.ui.visibility: the model,
// the apps of its server, or both. Both when it is absent, as MCP Apps
// defines, and when the list names neither (an empty or unknown list is
// taken as no restriction rather than a tool no one may call).
func visibility(t mcp.Tool) (model, app bool) {
	list, _ := toolUI(t)["visibility"].([]any)
	for _, v := range list {
		switch v {
		case "model":
			model = true
		case "app":
			app = true
		}
	}
	if !model && !app {
		return true, true
	}
	return model, app
}

// toolUI is t's _meta.ui (MCP Apps), or nil.
func toolUI(t mcp.Tool) map[string]any {
	if t.Meta == nil {
		return nil
	}
	ui, _ := t.Meta.AdditionalFields["ui"].(map[string]any)
	return ui
}
