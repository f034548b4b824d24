package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

type fixedWindows int

func (w fixedWindows) Window(context.Context, string) int { return int(w) }
func (fixedWindows) Learn(string, int)                    {}

// BenchmarkBudget1000 is the budget check before a model call of a
// conversation with 1000 working-memory entries (user messages, answers,
// tool calls and results of ~400 bytes each) that fits its window: what
// every turn pays when nothing needs compacting.
func BenchmarkBudget1000(b *testing.B) {
	r := NewRunner(Config{Windows: fixedWindows(1 << 20)})
	t := &turn{r: r, conv: Conversation{ID: "c"}, ctx: context.Background()}
	body := strings.Repeat("lorem ipsum dolor sit amet ", 15)
	mem := []ModelMessage{{Role: RoleSystem, Content: []Content{Text(DefaultSystemPrompt)}}}
	for i := 0; len(mem) < 1000; i++ {
		switch i % 4 {
		case 0:
			mem = append(mem, ModelMessage{Role: RoleUser, Content: []Content{Text(body)}})
		case 1:
			mem = append(mem, ModelMessage{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: fmt.Sprint("call", i), Name: "fs__read", Arguments: `{"path":"a.txt"}`}}})
		case 2:
			mem = append(mem, ModelMessage{Role: RoleTool, ToolCallID: fmt.Sprint("call", i-1), Name: "fs__read", Content: []Content{Text(body)}})
		case 3:
			mem = append(mem, ModelMessage{Role: RoleAssistant, Content: []Content{Text(body)}, Reasoning: body})
		}
	}
	specs := []ToolSpec{{Name: "fs__read", Description: "reads a file", Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	b.ReportAllocs()
	for b.Loop() {
		p, err := t.prepare(&mem, specs, false)
		if err != nil || len(p.send) != 1000 {
			b.Fatal(err, len(p.send))
		}
	}
}
