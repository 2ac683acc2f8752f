"""A research assistant with two tools, published over A2A on stdio."""

from cleveragents import A2A, Agent, tool


@tool
def search_web(query: str) -> str:
    """Search the web for information."""
    return f"Results for: {query}"


@tool
def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


agent = Agent(name="Research Assistant", role="Research Analyst", goal="Help users research topics",
              tools=[search_web, word_count])

if __name__ == "__main__":
    A2A(agent=agent).serve_stdio()
