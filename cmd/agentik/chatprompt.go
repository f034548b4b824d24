package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentik/agentik/internal/agent"
	"github.com/agentik/agentik/internal/client"
)

// The chat's /prompt command: the tool servers' prompts (MCP), listed
// and expanded into the message to send.
const promptUsage = "/prompt lists the tool servers' prompts; /prompt NAME [ARG=VALUE …] (NAME or SERVER/NAME) sends one, asking for the required arguments not given"

// isPromptCommand reports whether a message is a /prompt command.
func isPromptCommand(text string) bool {
	f := strings.Fields(text)
	return len(f) > 0 && f[0] == "/prompt"
}

// promptContent runs a /prompt command: without a name it lists the
// prompts and sends nothing (ok false); with one it expands that prompt,
// asking on out for each required argument the line did not give (read
// from answers; an empty answer or Ctrl-C gives up), prints what it
// became, and returns it as the content to send. A refusal is printed and
// nothing is sent.
func promptContent(ctx context.Context, c *client.Client, text string, out, errOut io.Writer, answers <-chan string, interrupts <-chan os.Signal) (content []agent.Content, ok bool) {
	words, err := splitWords(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "/prompt")))
	if err != nil {
		fmt.Fprintln(errOut, "error:", err)
		return nil, false
	}
	prompts, err := c.Prompts(ctx)
	if err != nil {
		fmt.Fprintln(errOut, "error:", err)
		return nil, false
	}
	if len(words) == 0 {
		listPrompts(prompts, out)
		return nil, false
	}
	p, err := findPrompt(prompts, words[0])
	if err != nil {
		fmt.Fprintln(errOut, "error:", err)
		return nil, false
	}
	args := map[string]string{}
	for _, w := range words[1:] {
		k, v, found := strings.Cut(w, "=")
		if !found || k == "" {
			fmt.Fprintf(errOut, "error: %q is not ARG=VALUE; %s\n", w, promptUsage)
			return nil, false
		}
		args[k] = v
	}
	for _, a := range p.Arguments {
		if !a.Required || strings.TrimSpace(args[a.Name]) != "" {
			continue
		}
		desc := ""
		if a.Description != "" {
			desc = " (" + stripControls(a.Description) + ")"
		}
		fmt.Fprintf(out, "%s%s: ", stripControls(a.Name), desc)
		select {
		case v, open := <-answers:
			if !open || strings.TrimSpace(v) == "" {
				fmt.Fprintln(out, "\n[prompt not sent]")
				return nil, false
			}
			args[a.Name] = v
		case <-interrupts:
			fmt.Fprintln(out, "\n[prompt not sent]")
			return nil, false
		case <-ctx.Done():
			return nil, false
		}
	}
	res, err := c.Prompt(ctx, p.Server, p.Name, args)
	if err != nil {
		fmt.Fprintln(errOut, "error:", err)
		return nil, false
	}
	var texts []string
	for _, m := range res.Messages {
		for _, part := range m.Content {
			switch part.Type {
			case agent.ContentText:
				texts = append(texts, part.Body)
			case agent.ContentResource:
				fmt.Fprintf(out, "[attached %s]\n", stripControls(part.URI))
			}
			content = append(content, part)
		}
	}
	if len(content) == 0 {
		fmt.Fprintf(errOut, "error: prompt %s/%s expanded to nothing\n", p.Server, p.Name)
		return nil, false
	}
	fmt.Fprintf(out, "[prompt %s/%s] %s\n", stripControls(p.Server), stripControls(p.Name), oneLine(strings.Join(texts, " "), 400))
	return content, true
}

// listPrompts prints each prompt as the command that sends it.
func listPrompts(ps []agent.Prompt, out io.Writer) {
	if len(ps) == 0 {
		fmt.Fprintln(out, "the tool servers offer no prompts")
		return
	}
	fmt.Fprintln(out, "prompts of the tool servers:")
	for _, p := range ps {
		var args []string
		for _, a := range p.Arguments {
			if a.Required {
				args = append(args, a.Name+"=…")
			} else {
				args = append(args, "["+a.Name+"=…]")
			}
		}
		line := strings.TrimSpace("/prompt " + p.Name + " " + strings.Join(args, " "))
		fmt.Fprintf(out, "  %s  (%s) %s\n", stripControls(line), stripControls(p.Server), oneLine(p.Description, 120))
	}
}

// findPrompt finds NAME or SERVER/NAME among ps.
func findPrompt(ps []agent.Prompt, name string) (agent.Prompt, error) {
	server, short, qualified := strings.Cut(name, "/")
	if !qualified {
		server, short = "", name
	}
	var found []agent.Prompt
	for _, p := range ps {
		if p.Name == short && (server == "" || p.Server == server) {
			found = append(found, p)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return agent.Prompt{}, fmt.Errorf("no prompt %q; /prompt lists them", name)
	}
	var names []string
	for _, p := range found {
		names = append(names, p.Server+"/"+p.Name)
	}
	return agent.Prompt{}, fmt.Errorf("%q is the name of prompts of several servers: say which, %s", name, strings.Join(names, " or "))
}

// splitWords splits s at spaces, keeping what is between double quotes
// together (city="New York").
func splitWords(s string) ([]string, error) {
	var out []string
	var b strings.Builder
	quoted, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				out = append(out, b.String())
				b.Reset()
				inWord = false
			}
		default:
			b.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, errors.New(`a " is not closed`)
	}
	if inWord {
		out = append(out, b.String())
	}
	return out, nil
}
