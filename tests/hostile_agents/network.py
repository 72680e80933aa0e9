"""Hostile: tries to reach addresses outside the sandbox. The query is a comma list of host:port."""

import socket


def agent_main(problem):
    outcomes = []
    for address in problem["query"].split(","):
        host, port = address.rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=2) as connection:
                connection.sendall(b"ESCAPED")
            outcomes.append(f"{address} reached")
        except OSError as exc:
            outcomes.append(f"{address} blocked ({type(exc).__name__})")
    try:
        socket.getaddrinfo("example.com", 80)
        outcomes.append("dns resolved")
    except OSError:
        outcomes.append("dns blocked")
    if any("reached" in o or "resolved" in o for o in outcomes):
        return [{"escaped": outcomes}]
    raise ConnectionError("; ".join(outcomes))
