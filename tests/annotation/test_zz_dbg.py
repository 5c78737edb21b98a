import cProfile, pstats
from tests.annotation.test_tag_review_views import *
def test_dbg(atp, clients):
    index = '{"img_index": 0}'
    text = "\n\n".join(f"Paragraph {i}.\n\n" + tool("Reference", f"d{i}", index) for i in range(50))
    _, response = make_item(atp, text)
    c = clients["annotator"]
    c.get(url(response))
    pr = cProfile.Profile(); pr.enable(); c.get(url(response)); pr.disable()
    pstats.Stats(pr).sort_stats("cumulative").print_stats(25)
    assert 0
