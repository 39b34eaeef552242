package inventory

import "errors"

// ErrShort is returned when a reservation asks for more than is in stock.
var ErrShort = errors.New("not enough stock")

// Stock is the quantity on hand per SKU.
type Stock map[string]int

// Reserve takes n items of sku out of stock.
func (s Stock) Reserve(sku string, n int) error {
	if s[sku] < n {
		return ErrShort
	}
	s[sku] -= n
	return nil
}
