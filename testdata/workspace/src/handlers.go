package inventory

import "net/http"

// reserve handles POST /reserve?sku=..&n=..
func reserve(s Stock) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.Reserve(r.URL.Query().Get("sku"), 1); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError) // should be 409 for ErrShort
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
