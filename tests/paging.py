"""Query strings every paginated list (page >= 1, page_size 1-100) must refuse with a 422."""

OUT_OF_RANGE_PAGING = [
    "page=0",
    "page=-1",
    "page=abc",
    "page_size=0",
    "page_size=101",
    "page_size=1.5",
    "page_size=%27%20OR%201%3D1",
    "page=99999999999999999999",
]
