// Package telemetry observes agentik from its edges: Prometheus metrics and
// OpenTelemetry traces. It decorates the agent's Model and Tools seams
// (model and tool calls: counters, histograms, chat and execute_tool
// spans), wraps each turn's context through agent.Config.TurnContext (the
// invoke_agent span), follows the committed event stream like any client
// (turns by outcome and duration), and implements server.Observer (HTTP
// requests, WebSockets, SSE streams). Nothing in internal/agent knows about
// Prometheus or OpenTelemetry.
//
// Label values are bounded: routes are patterns, tools are counted by
// server, models by their configured name; conversation ids appear only on
// spans, never on metrics.
package telemetry
