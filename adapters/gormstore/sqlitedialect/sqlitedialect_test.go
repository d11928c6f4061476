package sqlitedialect_test

import (
	"errors"
	"path/filepath"
	"testing"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/logger"

	"github.com/switchboard-ai/switchboard/adapters/gormstore/sqlitedialect"
)

func open(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(sqlitedialect.Open("file:"+filepath.Join(t.TempDir(), "t.db")+"?_pragma=foreign_keys(1)"),
		&gorm.Config{TranslateError: true, Logger: logger.Discard})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, _ := db.DB()
	t.Cleanup(func() { sqlDB.Close() })
	return db
}

type row struct {
	ID   int    `gorm:"primaryKey"`
	Name string "gorm:\"column:na`me\""
}

// TestStatements: the SQL GORM builds on this dialect, each statement also run on a real file.
func TestStatements(t *testing.T) {
	t.Parallel()
	db := open(t)
	if err := db.Exec("CREATE TABLE items (id INTEGER PRIMARY KEY, `na``me` TEXT)").Error; err != nil {
		t.Fatal(err)
	}
	tbl := func(tx *gorm.DB) *gorm.DB { return tx.Table("main.items") }
	tests := []struct {
		name string
		run  func(tx *gorm.DB) *gorm.DB
		want string
	}{
		{"quoted dotted name", func(tx *gorm.DB) *gorm.DB { return tbl(tx).Find(&[]row{}) },
			"SELECT * FROM `main`.`items`"},
		{"limit and offset", func(tx *gorm.DB) *gorm.DB { return tbl(tx).Limit(2).Offset(3).Find(&[]row{}) },
			"SELECT * FROM `main`.`items` LIMIT 2 OFFSET 3"},
		{"offset alone", func(tx *gorm.DB) *gorm.DB { return tbl(tx).Offset(3).Find(&[]row{}) },
			"SELECT * FROM `main`.`items` LIMIT -1 OFFSET 3"},
		{"row lock dropped", func(tx *gorm.DB) *gorm.DB {
			return tbl(tx).Clauses(clause.Locking{Strength: "UPDATE"}).Find(&[]row{})
		}, "SELECT * FROM `main`.`items` "}, // GORM writes the space before a clause, then the clause drops itself
		{"insert returning", func(tx *gorm.DB) *gorm.DB {
			return tbl(tx).Clauses(clause.Returning{}).Create(&row{Name: "a"})
		}, "INSERT INTO `main`.`items` (`na``me`) VALUES (\"a\") RETURNING *"},
	}
	for _, tt := range tests {
		if got := db.ToSQL(tt.run); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
		if err := tt.run(db).Error; err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// TestTranslate: constraint violations come back as GORM's errors; a nested transaction rolls back to its
// savepoint alone.
func TestTranslate(t *testing.T) {
	t.Parallel()
	db := open(t)
	for _, s := range []string{
		"CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT UNIQUE)",
		"CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent (id))",
		"INSERT INTO parent (id, name) VALUES (1, 'a')",
	} {
		if err := db.Exec(s).Error; err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		stmt string
		want error
	}{
		{"INSERT INTO parent (id, name) VALUES (1, 'b')", gorm.ErrDuplicatedKey},
		{"INSERT INTO parent (id, name) VALUES (2, 'a')", gorm.ErrDuplicatedKey},
		{"INSERT INTO child (parent_id) VALUES (9)", gorm.ErrForeignKeyViolated},
	} {
		if err := db.Exec(tt.stmt).Error; !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.stmt, err, tt.want)
		}
	}

	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("INSERT INTO parent (id, name) VALUES (2, 'kept')").Error; err != nil {
			return err
		}
		inner := tx.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("INSERT INTO parent (id, name) VALUES (3, 'undone')").Error; err != nil {
				return err
			}
			return errors.New("undo")
		})
		if inner == nil {
			t.Error("inner transaction succeeded")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	if err := db.Raw("SELECT name FROM parent ORDER BY id").Scan(&names).Error; err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || names[1] != "kept" {
		t.Fatalf("after a rolled-back savepoint: %v, want [a kept]", names)
	}
}
