"""TEMPORARY stub for the core branch; replaced by the decoders branch at merge."""
UNDECIDED, ACCEPTED, REJECTED = 0, 1, 2


class JsonBoundary:
    def __init__(self, opens="{["):
        self.status = UNDECIDED
        self.depth = 0
        self.in_str = False
        self.esc = False
        self.opens = opens

    def feed(self, text):
        for i, c in enumerate(text):
            if self.status == UNDECIDED:
                if c.isspace():
                    continue
                if c in self.opens:
                    self.status = ACCEPTED
                else:
                    self.status = REJECTED
                    return -1
            if self.status == REJECTED:
                return -1
            if self.in_str:
                if self.esc:
                    self.esc = False
                elif c == "\\":
                    self.esc = True
                elif c == '"':
                    self.in_str = False
                continue
            if c == '"':
                self.in_str = True
            elif c in "{[":
                self.depth += 1
            elif c in "}]":
                self.depth -= 1
                if self.depth == 0:
                    return i + 1
        return -1
