def handler(event):
    return event
