package protocol

// WebSocket ops of schedules (docs/PROTOCOL.md, Schedules); each mirrors
// its REST route under /agentik/schedules and takes the same fields, the
// route's {schedule_id} as the field schedule_id.
const (
	OpListSchedules    = "list_schedules"
	OpGetSchedule      = "get_schedule"
	OpCreateSchedule   = "create_schedule"
	OpUpdateSchedule   = "update_schedule"
	OpDeleteSchedule   = "delete_schedule"
	OpListScheduleRuns = "list_schedule_runs"
)
