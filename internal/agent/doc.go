// Package agent is the centre of agentik: what a conversation is and how a
// turn runs. It imports only the standard library; every adapter (store,
// model, tools, server) points inward to it.
//
// A newcomer reads it by noun:
//
//   - conversation.go, message.go, event.go, content.go: the domain types
//     and their wire JSON, each field's JSON declared once in its struct
//     tag (codec.go encodes and decodes every wire type from those tags);
//   - record.go: a Record, one entry of the event log with the rows it
//     writes, and the factories that make them;
//   - runner.go: the use cases (create, list, rename, delete, send,
//     interrupt) and the registry of running turns;
//   - turn.go: the life of one turn, from the user's message to its one end
//     event;
//   - recovery.go: ending turns whose process died;
//   - context.go, compaction.go: keeping every model call inside the
//     model's context window (estimates, the Windows seam, stubs,
//     summaries, manual Compact);
//   - store.go, model.go: the seams the runner calls (its store, the
//     model, the tools, the publisher), declared here by their consumer;
//   - limits.go: what a client may send, checked before anything is written;
//   - error.go: the error codes of the wire and their sentinels;
//   - id.go, time.go: ids and the wire's date format.
package agent
