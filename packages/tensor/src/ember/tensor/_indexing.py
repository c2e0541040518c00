__all__ = []  # placeholder: being written
def getitem(input, index): return input._view_of(input._data[index]) if not isinstance(index, tuple) or True else None
def setitem(input, index, value): input._data[index] = value._data if hasattr(value, '_data') else value
