package sqlite

import (
	"reflect"
	"testing"
	"time"

	"github.com/dont-cli/dont/internal/ledger"
	"github.com/dont-cli/dont/internal/spawn"
)

// entityCopy and spawnCopy copy every list and pointer of their types by
// name: a field added to either must be added there too (or a known value
// would share it with its caller, or keep an empty list a read returns
// as nil).
func TestWhatAStoreKnowsCopiesEveryListAndPointer(t *testing.T) {
	for typ, handled := range map[reflect.Type][]string{
		reflect.TypeFor[ledger.Entity](): {"Atoms", "Refs", "Confidence", "DependsOn"},
		reflect.TypeFor[spawn.Spawn]():   {"Temperature", "ResolvedAt", "Request"},
	} {
		var refs []string
		for f := range typ.Fields() {
			switch f.Type.Kind() {
			case reflect.Slice, reflect.Pointer, reflect.Map, reflect.Interface, reflect.Struct, reflect.Array:
				if f.Type == reflect.TypeFor[time.Time]() {
					continue
				}
				refs = append(refs, f.Name)
			}
		}
		if !reflect.DeepEqual(refs, handled) {
			t.Errorf("%s has fields %v beyond its plain values; known.go copies %v", typ, refs, handled)
		}
	}
}
