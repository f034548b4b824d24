package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"reflect"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// migratedTables are the row structs gorm migrates, in groups migrated in
// this order (a noun's file names its group).
var migratedTables = [][]any{
	{&conversationRow{}, &messageRow{}, &memoryRow{}, &eventRow{}, &metaRow{}, &searchRow{}, &queueRow{}, &pendingRow{}, &elicitRow{}, &responseRow{}, &agentRow{}, &agentVersionRow{}},
	userTables,       // user.go
	scheduleTables,   // schedule.go
	memoryTables,     // memory.go
	auditTables,      // audit.go
	credentialTables, // credential.go
	projectTables,    // project.go
	shareTables,      // share.go
	groupTables,      // usergroup.go
	feedbackTables,   // feedback.go
	promptTables,     // savedprompt.go
	siteTables,       // site.go
	fileTables,       // file.go
}

// metaSchema is the meta key of the schema print: the digest of the row
// structs the tables were last migrated to.
const metaSchema = "schema"

// schemaVersion is part of the print: raise it to make every database run
// gorm's migration again on its next open (a change gorm's migration must
// apply that no row struct shows).
const schemaVersion = 1

// printOf digests every migrated row struct: its table, and each field's
// name, type and tags, embedded structs included. Any change to a row
// struct changes it.
func printOf(postgres bool) string { return printTables(postgres, migratedTables) }

func printTables(postgres bool, tables [][]any) string {
	h := sha256.New()
	fmt.Fprintf(h, "v%d postgres=%v\n", schemaVersion, postgres)
	for _, group := range tables {
		fmt.Fprintln(h, "group")
		for _, m := range group {
			t := reflect.TypeOf(m).Elem()
			name := ""
			if tn, ok := m.(interface{ TableName() string }); ok {
				name = tn.TableName()
			}
			fmt.Fprintf(h, "table %s %s\n", t.Name(), name)
			printFields(h, t)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func printFields(h hash.Hash, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		fmt.Fprintf(h, "%s %s %q %v\n", f.Name, f.Type, f.Tag, f.Anonymous)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			printFields(h, f.Type)
		}
	}
}

// schemaState is what Open knows of the database's print.
type schemaState struct {
	want string
	same bool // the stored print is want: gorm's migration may be skipped
}

// schemaPrint reads the stored print and compares it with the row
// structs'. A database without the meta table, or without a print (made
// before prints were kept), is migrated.
func schemaPrint(tx *gorm.DB, postgres bool) (schemaState, error) {
	st := schemaState{want: printOf(postgres)}
	if !tx.Migrator().HasTable(&metaRow{}) {
		return st, nil
	}
	var got []string
	if err := tx.Raw("SELECT value FROM meta WHERE key = ?", metaSchema).Scan(&got).Error; err != nil {
		return st, fmt.Errorf("schema print: %w", err)
	}
	st.same = len(got) == 1 && got[0] == st.want
	return st, nil
}

// save stores the print once the migration has succeeded.
func (st schemaState) save(tx *gorm.DB) error {
	if st.same {
		return nil
	}
	err := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "key"}}, DoUpdates: clause.AssignmentColumns([]string{"value"})}).
		Create(&metaRow{Key: metaSchema, Value: st.want}).Error
	if err != nil {
		return fmt.Errorf("schema print: %w", err)
	}
	return nil
}
