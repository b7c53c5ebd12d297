// Package arch holds the architecture rules of the module as tests: the domain core imports
// neither HTTP nor SQL, and the transports (account API, model hosts, compatibility surface,
// web console) do not import one another. It has no code of its own.
package arch
