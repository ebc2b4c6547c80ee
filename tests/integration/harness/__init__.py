"""Integration test harness: start a server, talk to it over raw sockets."""
