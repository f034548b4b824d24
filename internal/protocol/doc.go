// Package protocol is agentik's wire contract for clients (DESIGN.md §5,
// docs/PROTOCOL.md): the WebSocket ops and frames, the commands a client
// sends and how they are checked, and the requests and results of the REST
// routes and WebSocket replies. The server, the Go client, the terminal
// commands and the bench all speak it through this one package; the
// events themselves are agent's types (agent.AllEvent and its kin).
//
// It depends only on the agent package and the standard library.
package protocol
