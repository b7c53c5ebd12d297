// Package apierr owns the error catalogue of the service as data: every code of spec 02 with
// its HTTP status, error_type, retry advice, charged value, docs link and the fields it carries.
//
// Handlers return *Error values built with New; exactly one function in internal/httpapi turns
// an error into a response. This package imports nothing but the standard library and must not
// import net/http handlers or any store.
package apierr
