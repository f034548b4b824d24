// Command mcpserver is an MCP server for the tests of package tool: stdio,
// built by TestMain. Its tools misbehave on request.
//
// Environment: MCPSERVER_PAGE_SIZE pages tools/list; MCPSERVER_EXTRA_TOOLS
// adds that many dummy tools; MCPSERVER_GRANDCHILD=1 starts a `sleep` child
// in the same process group, like an npx wrapper's node;
// MCPSERVER_START_GATE=PATH waits until the file PATH exists before
// answering anything, like a server that is slow to start;
// MCPSERVER_FROZEN_MARK=PATH makes the freeze tool create the file PATH once
// the server reads no more requests.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}

func run() error {
	opts := []server.ServerOption{server.WithToolCapabilities(true)}
	if n, _ := strconv.Atoi(os.Getenv("MCPSERVER_PAGE_SIZE")); n > 0 {
		opts = append(opts, server.WithPaginationLimit(n))
	}
	s := server.NewMCPServer("mcpserver", "1", opts...)
	addTools(s)
	if n, _ := strconv.Atoi(os.Getenv("MCPSERVER_EXTRA_TOOLS")); n > 0 {
		for i := range n {
			s.AddTool(mcp.NewTool(fmt.Sprintf("extra%02d", i)), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText(strconv.Itoa(i)), nil
			})
		}
	}
	if os.Getenv("MCPSERVER_GRANDCHILD") == "1" {
		c := exec.Command("sleep", "1000")
		if err := c.Start(); err != nil {
			return err
		}
	}
	if gate := os.Getenv("MCPSERVER_START_GATE"); gate != "" {
		for {
			if _, err := os.Stat(gate); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return server.NewStdioServer(s).Listen(context.Background(), stdin{}, os.Stdout)
}

// frozen makes the server stop reading requests (the freeze tool).
var frozen atomic.Bool

// stdin is os.Stdin that blocks forever once frozen.
type stdin struct{}

func (stdin) Read(p []byte) (int, error) {
	if frozen.Load() {
		hang()
	}
	n, err := os.Stdin.Read(p)
	if frozen.Load() {
		hang()
	}
	return n, err
}

// hang blocks forever; sleeping, so the runtime does not end the process as
// deadlocked.
func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

func addTools(s *server.MCPServer) {
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echoes text."), mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("sleep", mcp.WithDescription("Sleeps ms milliseconds (0: forever), reporting progress every progress_ms."),
		mcp.WithNumber("ms"), mcp.WithNumber("progress_ms")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ms := req.GetInt("ms", 0)
			every := req.GetInt("progress_ms", 0)
			var token any
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			var end <-chan time.Time
			if ms > 0 {
				end = time.After(time.Duration(ms) * time.Millisecond)
			}
			var tick <-chan time.Time
			if every > 0 && token != nil {
				t := time.NewTicker(time.Duration(every) * time.Millisecond)
				defer t.Stop()
				tick = t.C
			}
			for i := 1; ; i++ {
				select {
				case <-end:
					return mcp.NewToolResultText("slept"), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-tick:
					_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
						map[string]any{"progressToken": token, "progress": i})
				}
			}
		})
	s.AddTool(mcp.NewTool("env", mcp.WithDescription("Lists the environment.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			env := os.Environ()
			sort.Strings(env)
			return mcp.NewToolResultText(strings.Join(env, "\n")), nil
		})
	s.AddTool(mcp.NewTool("crash", mcp.WithDescription("Exits at once.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "crashing on purpose")
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(mcp.NewTool("freeze", mcp.WithDescription("Stops reading requests and never answers: a hung server.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			frozen.Store(true)
			if mark := os.Getenv("MCPSERVER_FROZEN_MARK"); mark != "" {
				_ = os.WriteFile(mark, nil, 0o600)
			}
			hang()
			return nil, nil
		})
	s.AddTool(mcp.NewTool("pid", mcp.WithDescription("Says its pid and process group.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			pgid, _ := syscall.Getpgid(0)
			return mcp.NewToolResultText(fmt.Sprintf("%d %d", os.Getpid(), pgid)), nil
		})
	s.AddTool(mcp.NewTool("big", mcp.WithDescription("Returns n bytes."), mcp.WithNumber("n")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strings.Repeat("é", req.GetInt("n", 0)/2)), nil
		})
	s.AddTool(mcp.NewTool("fail", mcp.WithDescription("Reports an error.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("it went wrong"), nil
		})
	s.AddTool(mcp.NewTool("add_tool", mcp.WithDescription("Adds a tool named name."), mcp.WithString("name", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			name := req.GetString("name", "")
			s.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return mcp.NewToolResultText("I am " + name), nil
			})
			return mcp.NewToolResultText("added"), nil
		})
}
