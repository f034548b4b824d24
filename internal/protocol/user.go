package protocol

// WebSocket ops of accounts (docs/PROTOCOL.md, Accounts); each mirrors its
// REST route under /agentik/me, /agentik/users and /agentik/usage and
// takes the same fields: the route's {user_id} and {key_id} as fields of
// those names, the query parameters of /agentik/usage as fields.
const (
	OpMe         = "me"
	OpGetUsage   = "get_usage"
	OpListUsers  = "list_users"
	OpGetUser    = "get_user"
	OpCreateUser = "create_user"
	OpUpdateUser = "update_user"
	OpDeleteUser = "delete_user"
	OpListKeys   = "list_keys"  // without user_id: the caller's
	OpCreateKey  = "create_key" // the key is in this reply only
	OpRevokeKey  = "revoke_key"
	// Password accounts: an invite link (POST /agentik/invites), the
	// caller's password (PUT /agentik/me/password), an admin's reset link
	// of a user (POST /agentik/users/{user_id}/reset).
	OpCreateInvite    = "create_invite"
	OpSetPassword     = "set_password"
	OpCreateResetLink = "create_reset_link"
	// The audit log (admin): GET /agentik/audit.
	OpListAudit = "list_audit"
)

// WebSocket ops of groups (docs/PROTOCOL.md, Groups), each mirroring its
// route under /agentik/groups: {group_id} and {user_id} are fields.
const (
	OpListGroups        = "list_groups"
	OpCreateGroup       = "create_group"
	OpGetGroup          = "get_group"
	OpUpdateGroup       = "update_group" // rename
	OpDeleteGroup       = "delete_group"
	OpAddGroupMember    = "add_group_member"
	OpRemoveGroupMember = "remove_group_member"
)
