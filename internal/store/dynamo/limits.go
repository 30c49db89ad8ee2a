package dynamo

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/dont-cli/dont/internal/errs"
)

// DynamoDB refuses an item over 400 KB and a TransactWriteItems of more
// than 100 actions or 4 MB of items, with a ValidationException that
// would reach a caller as an internal error. The store measures what it
// is about to write, as DynamoDB does, and refuses such a write itself,
// before any of it is written (a commit that issues a spawn writes the
// spawn's item first, so the whole commit is measured up front), with
// TooLarge: the caller sent more than one item can hold.

// TooLarge is the code of a write that DynamoDB's item or transaction
// limits would refuse.
const TooLarge errs.Code = "too-large-to-store"

const (
	maxItemBytes     = 400 * 1024
	maxTransactBytes = 4 * 1024 * 1024
)

// ItemBytes is an item's size by DynamoDB's rules: the UTF-8 length of
// every attribute name plus the size of its value. The store's limits
// check it; the test-only capacity counter bills by it.
func ItemBytes(it map[string]types.AttributeValue) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueBytes(v)
	}
	return n
}

func valueBytes(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberBytes(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberBytes(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueBytes(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + 1 + valueBytes(e)
		}
		return n
	}
	return 0
}

// numberBytes bounds a number's size from above: one byte per two
// digits, plus one.
func numberBytes(s string) int { return (len(s)+1)/2 + 1 }

func tooLarge(owner, msg string) error {
	e := errs.E(TooLarge, msg).Unmet("an item of at most 400 KB, a commit of at most 100 items and 4 MB")
	if owner != "" {
		e = e.On(owner)
	}
	return e
}

func tooManyItems(n int) error {
	return tooLarge("", fmt.Sprintf("this change would be one transaction of %d items; DynamoDB takes at most %d", n, maxTransactItems))
}

// checkItem refuses an item DynamoDB would refuse for its size.
func checkItem(owner string, it map[string]types.AttributeValue) error {
	if n := ItemBytes(it); n > maxItemBytes {
		return tooLarge(owner, fmt.Sprintf("this change would store an item of %d bytes; DynamoDB stores at most %d", n, maxItemBytes))
	}
	return nil
}

// checkTransact refuses a transaction DynamoDB would refuse for its
// items' number or size; owners (optional) name what each item is for.
func checkTransact(items []types.TransactWriteItem, owners []string) error {
	if len(items) > maxTransactItems {
		return tooManyItems(len(items))
	}
	total := 0
	for i, ti := range items {
		owner := ""
		if i < len(owners) {
			owner = owners[i]
		}
		var n int
		switch {
		case ti.Put != nil:
			if err := checkItem(owner, ti.Put.Item); err != nil {
				return err
			}
			n = ItemBytes(ti.Put.Item)
		case ti.Update != nil:
			n = ItemBytes(ti.Update.Key) + ItemBytes(ti.Update.ExpressionAttributeValues)
			if n > maxItemBytes {
				return tooLarge(owner, fmt.Sprintf("this change would write %d bytes to one item; DynamoDB stores at most %d", n, maxItemBytes))
			}
		case ti.Delete != nil:
			n = ItemBytes(ti.Delete.Key)
		case ti.ConditionCheck != nil:
			n = ItemBytes(ti.ConditionCheck.Key)
		}
		total += n
	}
	if total > maxTransactBytes {
		return tooLarge("", fmt.Sprintf("this change would be one transaction of %d bytes; DynamoDB takes at most %d", total, maxTransactBytes))
	}
	return nil
}

// checkPlan refuses, before anything is written, a commit any of whose
// writes DynamoDB would refuse for its size: the items of the spawns it
// issues, and then its one put or its transaction.
func (s *Store) checkPlan(p commitPlan) error {
	for _, sp := range p.spawnItems {
		it, err := s.spawnItem(sp)
		if err != nil {
			return err
		}
		if err := checkItem(sp.ID, it); err != nil {
			return err
		}
	}
	if p.flush != nil {
		if err := checkItem(p.inlineOwner, p.flush); err != nil {
			return err
		}
	}
	if p.inline != nil {
		return checkItem(p.inlineOwner, p.inline.Item)
	}
	return checkTransact(p.items, p.owners)
}
