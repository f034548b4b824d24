package eventlog

import (
	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
	lib "modernc.org/sqlite/lib"

	"github.com/agentik/agentik/internal/eventlog/sqlitedrv"
)

// OpenSQLiteWriter opens the SQLite writer's gorm handle on dsn over
// sqlitedrv, which keeps each statement compiled on the connection
// (glebarez/go-sqlite compiles it again on every Exec). The reads and the
// checkpointer stay on glebarez/go-sqlite; both write and read times alike
// (see sqlitedrv). With glebarez set (plain mode, benchmarks comparing the
// two), the writer is on glebarez/go-sqlite as well.
func OpenSQLiteWriter(dsn string, cfg *gorm.Config, glebarez bool) (*gorm.DB, error) {
	if glebarez {
		return gorm.Open(sqlite.Open(dsn), cfg)
	}
	return gorm.Open(SQLiteWriterDialector(dsn), cfg)
}

// SQLiteWriterDialector is gorm's SQLite dialector over sqlitedrv on dsn.
func SQLiteWriterDialector(dsn string) gorm.Dialector {
	return writerDialector{sqlite.Dialector{DriverName: sqlitedrv.DriverName, DSN: dsn}}
}

// writerDialector is gorm's SQLite dialector over sqlitedrv: it translates
// sqlitedrv's errors as the dialector translates glebarez/go-sqlite's.
type writerDialector struct{ sqlite.Dialector }

func (d writerDialector) Translate(err error) error {
	if e, ok := err.(*sqlitedrv.Error); ok {
		switch e.Code() {
		case lib.SQLITE_CONSTRAINT_UNIQUE, lib.SQLITE_CONSTRAINT_PRIMARYKEY:
			return gorm.ErrDuplicatedKey
		case lib.SQLITE_CONSTRAINT_FOREIGNKEY:
			return gorm.ErrForeignKeyViolated
		}
		return err
	}
	return d.Dialector.Translate(err)
}
