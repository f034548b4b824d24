package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"gorm.io/gorm/logger"
)

// slowQuery is how long a statement may take before it is logged at warn.
const slowQuery = 500 * time.Millisecond

// gormLog adapts gorm's logger to slog. It renders SQL only when it logs
// (gorm's own slog adapter renders every statement, a cost on the writer's
// hot path), never with parameter values (they hold prompts and answers),
// and logs failed statements at debug only: the error goes back to the
// caller, who decides.
type gormLog struct{ log *slog.Logger }

var _ logger.Interface = gormLog{}

func (l gormLog) LogMode(logger.LogLevel) logger.Interface { return l }

func (l gormLog) Info(ctx context.Context, msg string, data ...any) {
	l.log.DebugContext(ctx, "gorm", "message", fmt.Sprintf(msg, data...))
}

func (l gormLog) Warn(ctx context.Context, msg string, data ...any) {
	l.log.WarnContext(ctx, "gorm", "message", fmt.Sprintf(msg, data...))
}

func (l gormLog) Error(ctx context.Context, msg string, data ...any) {
	l.log.ErrorContext(ctx, "gorm", "message", fmt.Sprintf(msg, data...))
}

func (l gormLog) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), err error) {
	elapsed := time.Since(begin)
	switch {
	case elapsed >= slowQuery:
		sql, rows := fc()
		l.log.WarnContext(ctx, "slow_query", "duration", elapsed, "sql", sql, "rows", rows, "error", err)
	case err != nil && l.log.Enabled(ctx, slog.LevelDebug):
		sql, _ := fc()
		l.log.DebugContext(ctx, "query_failed", "sql", sql, "error", err)
	}
}

// ParamsFilter keeps parameter values out of logged SQL.
func (gormLog) ParamsFilter(_ context.Context, sql string, _ ...any) (string, []any) {
	return sql, nil
}
