"""HTTP routes: each turns the request into one contract model and hands it on."""
