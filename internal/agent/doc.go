// Package agent is the centre of agentik: what a conversation is and how a
// turn runs. It imports the standard library and, for schedules, two
// calendar parsers (robfig/cron, rrule-go), nothing else (internal/arch's
// TestImportRules); every adapter (store, model, tools, server, the
// protocols) points inward to it.
//
// A newcomer reads it by noun (internal/arch's test holds this map to the
// package's files):
//
//   - conversation.go, message.go, event.go, content.go, encoded.go: the
//     domain types and their wire JSON, each field's JSON declared once in
//     its struct tag (codec.go encodes and decodes every wire type from
//     those tags; encoded.go is an event as the bytes every hop shares);
//   - record.go: a Record, one entry of the event log with the rows it
//     writes, and the factories that make them;
//   - runner.go: the use cases (list, rename, delete, interrupt) and the
//     registry of running turns;
//   - start.go: Start, the one way a request starts a turn, making its
//     conversation when needed in the same append (a refused first send
//     leaves nothing), and Create;
//   - slot.go: the one place a turn starts (claim, begin);
//   - turn.go, linger.go, calls.go: the life of one turn, from the user's
//     message to its one end event; how streamed text is paced into
//     events; every tool call answered before the conversation goes on;
//   - recovery.go: continuing the turns whose process died from their last
//     stored step (or ending them, past the bound); lastturn.go: how a
//     conversation's last turn ended, for the projections' resumes;
//   - context.go, compaction.go: keeping every model call inside the
//     model's context window (estimates, the Windows seam, stubs,
//     summaries, manual Compact);
//   - approval.go, queue.go, branch.go: tool calls that wait for a person,
//     sends queued behind a running turn, the history as a tree;
//   - history.go: pages of history, bounded in count and bytes;
//   - elicit.go, elicitschema.go, toolcall.go: a tool asking the user for
//     input (durable like an approval) and the schema its answer is checked
//     against; what a tool call returns (text and images);
//   - inbox.go: Inbox, one user's waiting approvals and elicitations across
//     their conversations, answered through Approve and Elicit;
//   - settings.go, title.go: a conversation's model and sampling settings;
//     who names a conversation;
//   - temp.go: TempStore, the store of temp conversations, and its bounds;
//   - completion.go, response.go, external.go: what the protocols need of
//     the centre (whole histories of /v1 and their client-side tools,
//     stored Responses, conversation ids chosen by clients);
//   - import.go, search.go: importing conversations in one Append; search;
//   - principal.go, access.go, user.go, budget.go, standing.go: who is
//     calling, the one rule of who may see what, accounts and keys, token
//     budgets (each model call reserved and charged), and nothing run for
//     an owner who is disabled or deleted;
//   - password.go: password accounts (sign-up, invites, reset links) and
//     the seam of their hasher;
//   - project.go: projects (instructions, a default agent, knowledge,
//     members as viewer or editor) and the index the project rule of
//     access.go and package broker read;
//   - group.go: groups of users (an admin's, the OIDC claim's, SCIM's),
//     which agents are shared with (access.go's viewer decides);
//   - audit.go: the hash-chained audit log (who did what, from where), its
//     reader and the offline check of an export;
//   - agentdef.go, agentturn.go, delegate.go, remote.go: stored agent
//     definitions, the agent a turn runs as, delegation to another agent,
//     remote agents of other runtimes (A2A);
//   - schedule.go: prompts sent as turns on a schedule;
//   - appcall.go: a tool call an MCP App in a tool card makes, a turn of
//     its own without a model, under the same approval rules;
//   - feedback.go: a person's 👍 or 👎 (and comment) on an answer, and the
//     admins' counts per model and agent;
//   - share.go: read-only share links to a conversation as it was, opened
//     by their token, continued as the reader's own copy;
//   - memory.go: long-term memory, blocks per user and agent in every
//     prompt, the built-in tools that change them, revertible changes;
//   - file.go, knowledge.go: uploaded files, ingested in the background
//     into chunks (durable: all of a file's chunks at once), knowledge
//     bases of them, hybrid search fused by rank, the file_search tool
//     and the citations an answer keeps;
//   - filepart.go: a document in a user message (a file part of any
//     protocol): stored as the sender's file, its text inlined or left to
//     file_search, refused whole when any part is;
//   - preference.go, savedprompt.go: a user's settings (theme, default
//     model, date language) and their prompt library;
//   - site.go: the admin panel's site settings (providers, tool servers,
//     the default model, prompt and budget), checked and audited here;
//   - resource.go: the tool servers' resources (attached to a message,
//     read into working memory) and prompts, and their seams;
//   - store.go, model.go: the seams the runner calls (its store, the
//     model, the tools, the publisher), declared here by their consumer;
//   - limits.go: what a client may send, checked before anything is written;
//   - error.go: the error codes of the wire and their sentinels;
//   - id.go, time.go: ids and the wire's date format.
package agent
