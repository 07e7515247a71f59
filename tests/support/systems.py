"""What the strategies' tests share: one article, its question and two retrieved chunks, and a
strategy run on them against the scripted fake model (`run_system`); and `CORPUS`, three
articles of distinct words for the retrieval index."""

from freshrag.core.types import Article, Question, RetrievedChunk, SystemContext, Usage
from freshrag.systems import SYSTEMS
from tests.support.fakes import FakeRetriever, ScriptedLLM

ARTICLES = {"Velmora": Article("Velmora", "The Velmora bridge has nine spans.")}
QUESTION = Question("q1", "How many spans does the Velmora bridge have?", "Velmora")
CHUNKS = [RetrievedChunk("Velmora", 0, "Title: Velmora\nThe Velmora bridge has nine spans.", 0.91),
          RetrievedChunk("Ostrava Line", 3, "Title: Ostrava Line\nA railway.", 0.42)]
USAGE = Usage(40, 3)


def run_system(name, script, **context):
    """The strategy `name` answers QUESTION with `script` as the model's replies, every one of
    them used: (its answer, the requests it sent, the queries it retrieved with)."""
    llm = ScriptedLLM(script, usage=USAGE)
    retriever = FakeRetriever(CHUNKS)
    system = SYSTEMS[name](SystemContext(llm=llm, articles=ARTICLES, retriever=retriever,
                                         **context))
    answer = system.answer(QUESTION)
    assert not llm.script, "the system made fewer calls than scripted"
    return answer, llm.requests, retriever.queries


def extracts_in(request):
    """Whether the request's system message carries the retrieved Velmora chunk."""
    return "Title: Velmora\nThe Velmora bridge has nine spans." in request["messages"][0]["content"]


CORPUS = {
    "Velmora Bridge": Article("Velmora Bridge", "The Velmora bridge spans the river Ost with nine "
                              "arches of pale granite. " * 40),
    "Kettering Comet": Article("Kettering Comet", "The Kettering comet was seen by shepherds in "
                               "the northern hills at dawn. " * 40),
    "Ostrava Line": Article("Ostrava Line", "The Ostrava line is a railway through coal country "
                            "with eleven stations. " * 40),
}
